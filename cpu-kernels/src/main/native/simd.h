/*
 * The vector layer of the kernels written once for every target (decode_ops.c, few_row_product.c,
 * decode_attention.c whole; the "#else" branch of the others beside their AVX-512 one): compiled for
 * x86-64 with AVX-512 (-mavx512f: VL = 16 floats, one zmm register), with AVX2 + FMA + F16C (-mavx2
 * -mfma -mf16c: VL = 8, one ymm register) and for ARM64 with NEON (-march=armv8-a, or armv8.2-a+dotprod
 * for sdot: VL = 8, two q registers). A vector is GCC's generic vector of VL floats; only what has no
 * generic form (tails by masks, rounding, float16 widening, the int8 dot product) is written per ISA.
 * Built with -ffp-contract=fast, so a * b + c is one fused multiply-add on every target.
 */
#ifndef LLMZOO_SIMD_H
#define LLMZOO_SIMD_H

#include <stdint.h>
#include <string.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define VL 16
#elif defined(__AVX2__)
#include <immintrin.h>
#define VL 8
#elif defined(__aarch64__)
#include <arm_neon.h>
#define VL 8
#else
#error "the kernels need AVX-512 or AVX2 (x86-64), or NEON (ARM64)"
#endif

#ifndef INLINE
#define INLINE static inline __attribute__((always_inline))
#endif

typedef float vf __attribute__((vector_size(VL * 4)));
typedef int32_t vi __attribute__((vector_size(VL * 4)));
typedef uint32_t vu __attribute__((vector_size(VL * 4)));

INLINE vf vset1(float x) {
    return (vf){0} + x;
}

INLINE vf vzero(void) {
    return (vf){0};
}

INLINE vf vload(const float *p) {
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

INLINE void vstore(float *p, vf v) {
    memcpy(p, &v, sizeof v);
}

#if defined(__AVX512F__)
/* The lanes below n (all from n = VL on). */
INLINE __mmask16 lanes_below(int n) {
    return n >= VL ? (__mmask16)0xFFFF : (__mmask16)((1u << (n > 0 ? n : 0)) - 1);
}
#endif

/* The first n floats at p (all VL from n = VL on), the other lanes 0. */
INLINE vf vload_n(const float *p, int n) {
#if defined(__AVX512F__)
    return (vf)_mm512_maskz_loadu_ps(lanes_below(n), p);
#else
    if (n >= VL) {
        return vload(p);
    }
    vf v = {0};
    memcpy(&v, p, sizeof(float) * (n > 0 ? n : 0));
    return v;
#endif
}

/* The first n lanes of v (all from n = VL on) stored at p. */
INLINE void vstore_n(float *p, vf v, int n) {
#if defined(__AVX512F__)
    _mm512_mask_storeu_ps(p, lanes_below(n), (__m512)v);
#else
    if (n >= VL) {
        vstore(p, v);
    } else if (n > 0) {
        memcpy(p, &v, sizeof(float) * n);
    }
#endif
}

/* a where take is set (all ones), else b. */
INLINE vf vblend(vi take, vf a, vf b) {
    return (vf)((take & (vi)a) | (~take & (vi)b));
}

INLINE vf vmax(vf a, vf b) {
#if defined(__AVX512F__)
    return (vf)_mm512_max_ps((__m512)a, (__m512)b);
#elif defined(__AVX2__)
    return (vf)_mm256_max_ps((__m256)a, (__m256)b);
#else
    return vblend(a > b, a, b);
#endif
}

INLINE vf vabs(vf a) {
    return (vf)((vi)a & 0x7fffffff);
}

/* v with the lanes from n on 0. */
INLINE vf vtail(vf v, int n) {
#if defined(__AVX512F__)
    return (vf)_mm512_maskz_mov_ps(lanes_below(n), (__m512)v);
#else
    const vi index = {0, 1, 2, 3, 4, 5, 6, 7};
    return vblend(index < n, v, vzero());
#endif
}

/* Bit l set where lane l of x is above t (lanes ordered, bit 0 the first). */
INLINE unsigned vabove(vf x, float t) {
#if defined(__AVX512F__)
    return _mm512_cmp_ps_mask((__m512)x, _mm512_set1_ps(t), _CMP_GT_OQ);
#elif defined(__AVX2__)
    return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps((__m256)x, _mm256_set1_ps(t), _CMP_GT_OQ));
#else
    vi above = x > t;
    unsigned bits = 0;
    for (int l = 0; l < VL; l++) {
        bits |= (above[l] != 0) << l;
    }
    return bits;
#endif
}

/* The lanes' sum, pairwise (the upper half onto the lower, and again). */
INLINE float vsum(vf v) {
#if defined(__AVX512F__)
    return _mm512_reduce_add_ps((__m512)v);
#else
    float a0 = v[0] + v[4], a1 = v[1] + v[5], a2 = v[2] + v[6], a3 = v[3] + v[7];
    return (a0 + a2) + (a1 + a3);
#endif
}

INLINE float vmaxall(vf v) {
    float m = v[0];
    for (int i = 1; i < VL; i++) {
        m = v[i] > m ? v[i] : m;
    }
    return m;
}

/* x rounded to the nearest integer, ties to even (vroundps, frintn): an instruction rather than adding
   1.5 * 2^23, which fp-contract would fuse with the multiply before it and so round the exact product. */
INLINE vf vround(vf x) {
#if defined(__AVX512F__)
    return (vf)_mm512_roundscale_ps((__m512)x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#elif defined(__AVX2__)
    return (vf)_mm256_round_ps((__m256)x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
    float32x4_t lo, hi;
    memcpy(&lo, &x, sizeof lo);
    memcpy(&hi, (const char *)&x + sizeof lo, sizeof hi);
    lo = vrndnq_f32(lo);
    hi = vrndnq_f32(hi);
    memcpy(&x, &lo, sizeof lo);
    memcpy((char *)&x + sizeof lo, &hi, sizeof hi);
    return x;
#endif
}

/* 2^n for integral n in [-126, 127], from its exponent bits. */
INLINE vf vexp2i(vf n) {
    return (vf)((__builtin_convertvector(n, vi) + 127) << 23);
}

/* e^x for x <= 0, as exp_nonpositive in vector_math.h (Cephes' expf polynomial); 2^n applied in two
   halves so that results below FLT_MIN come out subnormal, as _mm512_scalef_ps gives them. */
INLINE vf vexp_nonpositive(vf x) {
    x = vmax(x, vset1(-104.0f));
    vf n = vround(x * 1.44269504088896341f);
    vf r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    vf p = vset1(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + (r + 1.0f);
#if defined(__AVX512F__)
    return (vf)_mm512_scalef_ps((__m512)p, (__m512)n);
#else
    vf half = vround(n * 0.5f - 0.25f); /* floor(n / 2) for integral n */
    return p * vexp2i(half) * vexp2i(n - half);
#endif
}

/* tanh(x), as tanh_ps in vector_math.h. */
INLINE vf vtanh(vf x) {
    vf a = vabs(x);
    vf z = x * x;
    vf p = vset1(-5.70498872745e-3f);
    p = p * z + 2.06390887954e-2f;
    p = p * z + -5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z + -3.33332819422e-1f;
    vf small = (p * z) * a + a;
    vf e = vexp_nonpositive(a * -2.0f);
    vf large = (1.0f - e) / (1.0f + e);
    vf magnitude = vblend(a > 0.625f, large, small);
    return vblend(x < 0.0f, -magnitude, magnitude);
}

/* 1 / (1 + e^-a), from e = e^-|a| so that the exponential never overflows. */
INLINE vf vsigmoid(vf a) {
    vf e = vexp_nonpositive(-vabs(a));
    return vblend(a < 0.0f, e, vset1(1.0f)) / (1.0f + e);
}

/* Two NEON halves as one vector of 8. */
#if defined(__aarch64__)
INLINE vf vjoin(float32x4_t lo, float32x4_t hi) {
    vf v;
    memcpy(&v, &lo, sizeof lo);
    memcpy((char *)&v + sizeof lo, &hi, sizeof hi);
    return v;
}
#endif

/* VL int8 codes at p widened to float32 (GCC's generic conversion of them is lane by lane). */
INLINE vf widen_int8(const int8_t *p) {
#if defined(__AVX512F__)
    return (vf)_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
#elif defined(__AVX2__)
    return (vf)_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
#else
    int16x8_t h = vmovl_s8(vld1_s8(p));
    return vjoin(vcvtq_f32_s32(vmovl_s16(vget_low_s16(h))), vcvtq_f32_s32(vmovl_s16(vget_high_s16(h))));
#endif
}

/* VL bfloat16 codes at p widened to float32 (a 16-bit shift: exact). */
INLINE vf widen_bf16(const uint16_t *p) {
#if defined(__AVX512F__)
    return (vf)_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16);
#elif defined(__AVX2__)
    return (vf)_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16);
#else
    return vjoin(vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16)),
            vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p + 4), 16)));
#endif
}

/* VL IEEE half codes at p widened to float32 (exact). */
INLINE vf widen_f16(const uint16_t *p) {
#if defined(__AVX512F__)
    return (vf)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
#elif defined(__AVX2__)
    return (vf)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
#else
    return vjoin(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))), vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p + 4))));
#endif
}

/* The first n IEEE half codes at p (all VL from n = VL on) widened to float32, the other lanes 0. */
INLINE vf widen_f16_n(const uint16_t *p, int n) {
    if (n >= VL) {
        return widen_f16(p);
    }
    uint16_t part[VL] = {0};
    memcpy(part, p, sizeof(uint16_t) * (n > 0 ? n : 0));
    return widen_f16(part);
}

/* The first n lanes of v (all from n = VL on) rounded to IEEE half codes at p: to nearest, ties to even
   (vcvtps2ph with imm 0, NEON's fcvtn in the default rounding mode), as PyTorch's float-to-half is. */
INLINE void narrow_f16_n(uint16_t *p, vf v, int n) {
    uint16_t codes[VL];
#if defined(__AVX512F__)
    _mm256_storeu_si256((__m256i *)codes, _mm512_cvtps_ph((__m512)v, _MM_FROUND_TO_NEAREST_INT));
#elif defined(__AVX2__)
    _mm_storeu_si128((__m128i *)codes, _mm256_cvtps_ph((__m256)v, _MM_FROUND_TO_NEAREST_INT));
#else
    float32x4_t lo, hi;
    memcpy(&lo, &v, sizeof lo);
    memcpy(&hi, (const char *)&v + sizeof lo, sizeof hi);
    vst1_u16(codes, vreinterpret_u16_f16(vcvt_f16_f32(lo)));
    vst1_u16(codes + 4, vreinterpret_u16_f16(vcvt_f16_f32(hi)));
#endif
    memcpy(p, codes, sizeof(uint16_t) * (n >= VL ? VL : (n > 0 ? n : 0)));
}

/* The IEEE half codes in the low 16 bits of each lane of words widened to float32 (exact). */
INLINE vf widen_f16_low(vu words) {
#if defined(__AVX512F__)
    return (vf)_mm512_cvtph_ps(_mm512_cvtepi32_epi16((__m512i)words));
#elif defined(__AVX2__)
    __m256i low = _mm256_and_si256((__m256i)words, _mm256_set1_epi32(0xffff));
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(low, low), 0xD8);
    return (vf)_mm256_cvtph_ps(_mm256_castsi256_si128(packed));
#else
    uint32x4_t lo, hi;
    memcpy(&lo, &words, sizeof lo);
    memcpy(&hi, (const char *)&words + sizeof lo, sizeof hi);
    return vjoin(vcvt_f32_f16(vreinterpret_f16_u16(vmovn_u32(lo))), vcvt_f32_f16(vreinterpret_f16_u16(vmovn_u32(hi))));
#endif
}

/* One IEEE half code widened to float32 (an int8 group's scale). */
INLINE float half_value(const uint16_t *p) {
#if defined(__AVX2__)
    return _cvtsh_ss(*p);
#else
    __fp16 h;
    memcpy(&h, p, sizeof h);
    return (float)h;
#endif
}

#if VL == 8 /* the int8 dot products of the AVX2 and NEON variants (AVX-512's are compressed_product.c's) */

/*
 * acc plus the products of 32 int8 pairs a[i] * b[i], four to a lane (which four is the ISA's; only
 * the lanes' sum is defined). a and b lie in [-127, 127], so no pair sum saturates.
 * AVX2: vpsignb makes a's magnitude and b with a's sign, vpmaddubsw multiplies them into 16-bit pair
 *   sums (at most 2 * 127^2 < 2^15), vpmaddwd sums those pairs into int32 (llama.cpp's mul_sum_i8_pairs).
 * NEON with the dot-product extension: two sdot (4 products to a lane, 16 bytes each).
 * NEON without: smull/smlal into 16-bit pair sums, sadalp into int32.
 */
#if defined(__AVX2__)
/* A weight's 32 int8 codes in registers, loaded once for every row of x. */
typedef __m256i codes32;

INLINE codes32 load_codes32(const int8_t *p) {
    return _mm256_loadu_si256((const __m256i *)p);
}

/* 32 int4 codes packed as compressed_format.h's unpack_int4 reads them, as int8 codes q - 8 in
   registers (lane for lane unpack_int4's), so no stored copy is loaded back. */
INLINE codes32 unpack_codes32(const uint8_t *packed) {
    const __m128i nibble = _mm_set1_epi8(0x0F);
    __m128i bytes = _mm_loadu_si128((const __m128i *)packed);
    __m256i w = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(bytes, nibble)),
            _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble), 1);
    return _mm256_sub_epi8(w, _mm256_set1_epi8(8));
}

/* dot32 of x's 32 codes at a with the weight's in registers. */
INLINE vi dot32_codes(vi acc, const int8_t *a, codes32 w) {
    __m256i x = _mm256_loadu_si256((const __m256i *)a);
    __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(w, x));
    return acc + (vi)_mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}
#else
typedef struct {
    int8x16_t low, high;
} codes32;

INLINE codes32 load_codes32(const int8_t *p) {
    return (codes32){vld1q_s8(p), vld1q_s8(p + 16)};
}

INLINE codes32 unpack_codes32(const uint8_t *packed) {
    uint8x16_t bytes = vld1q_u8(packed);
    int8x16_t eight = vdupq_n_s8(8);
    return (codes32){vsubq_s8(vreinterpretq_s8_u8(vandq_u8(bytes, vdupq_n_u8(0x0F))), eight),
            vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(bytes, 4)), eight)};
}

/* acc plus the products of 16 int8 pairs a[i] * b[i], four to a lane. */
INLINE int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(acc, a, b);
#else
    return vpadalq_s16(acc, vmlal_s8(vmull_s8(vget_low_s8(a), vget_low_s8(b)), vget_high_s8(a), vget_high_s8(b)));
#endif
}

INLINE vi dot32_codes(vi acc, const int8_t *a, codes32 w) {
    int32x4_t lo, hi;
    memcpy(&lo, &acc, sizeof lo);
    memcpy(&hi, (const char *)&acc + sizeof lo, sizeof hi);
    lo = dot16(lo, vld1q_s8(a), w.low);
    hi = dot16(hi, vld1q_s8(a + 16), w.high);
    memcpy(&acc, &lo, sizeof lo);
    memcpy((char *)&acc + sizeof lo, &hi, sizeof hi);
    return acc;
}
#endif

/*
 * Float32 sums of scaled int8 group dot products (dot32_scaled), per ISA: AVX2 one vector of 8 lanes; NEON one
 * q register of 4, a group's two 16-byte halves summed in int32 (exact: at most 32 * 127^2 < 2^24) before the
 * one conversion, as llama.cpp's ggml_vec_dot_q8_0_q8_0 does, so a group costs one scvtf and one fmla rather than
 * two of each. Only the lanes' sum is defined; dotsums_from and dotsums_to carry it to and from a vf.
 */
#if defined(__AVX2__)
typedef vf dotsums;

INLINE dotsums dotsums_zero(void) {
    return vzero();
}

INLINE dotsums dotsums_from(vf v) {
    return v;
}

INLINE vf dotsums_to(dotsums s) {
    return s;
}

/* acc + scale * the dot product of x's 32 codes at a with the weight's. */
INLINE dotsums dot32_scaled(dotsums acc, const int8_t *a, codes32 w, float scale) {
    return __builtin_convertvector(dot32_codes((vi){0}, a, w), vf) * scale + acc;
}
#else
typedef float32x4_t dotsums;

INLINE dotsums dotsums_zero(void) {
    return vdupq_n_f32(0.0f);
}

INLINE dotsums dotsums_from(vf v) {
    float32x4_t lo, hi;
    memcpy(&lo, &v, sizeof lo);
    memcpy(&hi, (const char *)&v + sizeof lo, sizeof hi);
    return vaddq_f32(lo, hi);
}

INLINE vf dotsums_to(dotsums s) {
    return vjoin(s, vdupq_n_f32(0.0f));
}

INLINE dotsums dot32_scaled(dotsums acc, const int8_t *a, codes32 w, float scale) {
    int32x4_t sums = dot16(dot16(vdupq_n_s32(0), vld1q_s8(a), w.low), vld1q_s8(a + 16), w.high);
    return vfmaq_n_f32(acc, vcvtq_f32_s32(sums), scale);
}
#endif

INLINE vi dot32(vi acc, const int8_t *a, const int8_t *b) {
    return dot32_codes(acc, a, load_codes32(b));
}

/*
 * The 32 inputs from xs as int8 codes q in [-127, 127] (rounded to nearest even, clamped as the weights
 * are) into codes, returning the scale max |x| / 127, so x ~ q * scale: compressed_format.h's
 * quantize_group, lane for lane.
 */
INLINE float quantize_group32(const float *xs, int8_t *codes) {
    vf v[4];
    vf amax = vzero();
    for (int i = 0; i < 4; i++) {
        v[i] = vload(xs + i * VL);
        amax = vmax(amax, vabs(v[i]));
    }
    float d = vmaxall(amax) / 127.0f;
    float inverse = d > 0.0f ? 1.0f / d : 0.0f;
    for (int i = 0; i < 4; i++) {
        vf q = vround(v[i] * inverse);
        q = vmax(vset1(-127.0f), q);
        q = vblend(q > 127.0f, vset1(127.0f), q);
        vi c = __builtin_convertvector(q, vi);
        for (int l = 0; l < VL; l++) {
            codes[i * VL + l] = (int8_t)c[l];
        }
    }
    return d;
}

#endif

#endif
