/*
 * Vectorised e^x and tanh for the AVX-512 kernels (decode_attention.c, decode_ops.c), each within
 * about 2 ulp of the exact value.
 */
#ifndef LLMZOO_VECTOR_MATH_H
#define LLMZOO_VECTOR_MATH_H

#include <immintrin.h>

/* e^x for x <= 0 (softmax's shifted scores), about 1 ulp: x = n ln 2 + r, e^r by the minimax
   polynomial of Cephes' expf, scaled by 2^n; below -104 the result is 0, as expf gives. */
static inline __m512 exp_nonpositive(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

/* tanh(x), within about 2 ulp: for |x| <= 0.625 Cephes' tanhf polynomial (x + x z P(z), z = x^2),
   above it 1 - 2 / (e^{2|x|} + 1) = (1 - e) / (1 + e) with e = e^{-2|x|} <= e^{-1.25}, where the
   numerator does not cancel; negated for negative x. Large |x| gives e = 0 and +-1. */
static inline __m512 tanh_ps(__m512 x) {
    __m512 a = _mm512_abs_ps(x);
    __m512 z = _mm512_mul_ps(x, x);
    __m512 p = _mm512_set1_ps(-5.70498872745e-3f);
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.06390887954e-2f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.37397155531e-2f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.33314422036e-1f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.33332819422e-1f));
    __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), a, a);
    __m512 e = exp_nonpositive(_mm512_mul_ps(a, _mm512_set1_ps(-2.0f)));
    __m512 one = _mm512_set1_ps(1.0f);
    __m512 large = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
    __mmask16 is_large = _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.625f), _CMP_GT_OQ);
    __m512 magnitude = _mm512_mask_blend_ps(is_large, small, large);
    __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    return _mm512_mask_sub_ps(magnitude, negative, _mm512_setzero_ps(), magnitude);
}

#endif
