/*
 * q4_k's inner product per variant (kquant_product.c): one super-block's scaled integer sums,
 * sum_j sc_j * (q_j . xq_j), for each row of x, on AVX2 and on NEON (the AVX-512 VNNI kernel, kq_t512, is
 * in kquant_product.c beside its column loop), with the x layout each expects (KQ_X_LAYOUT). Included by
 * kquant_product.c after its constants and types.
 */
#ifndef LLMZOO_KQUANT_SUMS_H
#define LLMZOO_KQUANT_SUMS_H

#if defined(__AVX2__)
/*
 * AVX2 (and the AVX-512 library without AVX512_VNNI), x in KQ_X_T256: the block's 128 code bytes (4 loads,
 * sub-blocks 2p and 2p + 1 in the nibbles of load p) transposed by dwords, once for all rows, into u_c
 * (c = 0-3) whose lane l holds dword c + 4 (l / 4) of load l % 4, so that lane l of every u_c is sub-block
 * 2 (l % 4) (low nibbles) or 2 (l % 4) + 1 (high). A row then takes 8 vpmaddubsw (codes unsigned and at most
 * 15: pair sums at most 2 * 15 * 127), their 16-bit sums added per nibble (4 of them, at most 15,240: no
 * overflow), and two vpmaddwd by the lanes' scales: 8 int32 lanes whose sum is the block's, where taking
 * each sub-block apart took 8 vpmaddwd and 8 additions a row.
 */
static inline __attribute__((always_inline)) void kq_sums(
        int rows, kq_i8 *sums, const uint8_t *qs, uint64_t sc, const int8_t *x) {
    const __m256i mask = _mm256_set1_epi8(0x0F);
    /* the 16-bit lanes of dword l take scale 2 (l % 4) (low nibbles) or 2 (l % 4) + 1 (high), 0 above */
    const __m256i pick_lo = _mm256_setr_epi8(0, -128, 0, -128, 2, -128, 2, -128, 4, -128, 4, -128, 6, -128, 6, -128,
            0, -128, 0, -128, 2, -128, 2, -128, 4, -128, 4, -128, 6, -128, 6, -128);
    const __m256i pick_hi = _mm256_add_epi8(pick_lo, _mm256_set1_epi16(1));
    __m256i y0 = _mm256_loadu_si256((const __m256i *)qs), y1 = _mm256_loadu_si256((const __m256i *)(qs + 32));
    __m256i y2 = _mm256_loadu_si256((const __m256i *)(qs + 64)), y3 = _mm256_loadu_si256((const __m256i *)(qs + 96));
    __m256i t0 = _mm256_unpacklo_epi32(y0, y1), t1 = _mm256_unpackhi_epi32(y0, y1);
    __m256i t2 = _mm256_unpacklo_epi32(y2, y3), t3 = _mm256_unpackhi_epi32(y2, y3);
    __m256i u[4] = {_mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2), _mm256_unpacklo_epi64(t1, t3),
        _mm256_unpackhi_epi64(t1, t3)};
    __m256i lo[4], hi[4];
    for (int c = 0; c < 4; c++) {
        lo[c] = _mm256_and_si256(u[c], mask);
        hi[c] = _mm256_and_si256(_mm256_srli_epi16(u[c], 4), mask);
    }
    __m256i scales = _mm256_set1_epi64x((long long)sc);
    __m256i sc_lo = _mm256_shuffle_epi8(scales, pick_lo), sc_hi = _mm256_shuffle_epi8(scales, pick_hi);
    for (int r = 0; r < rows; r++) {
        const __m256i *xr = (const __m256i *)(x + r * KQ_WEIGHTS);
        __m256i a = _mm256_maddubs_epi16(lo[0], _mm256_loadu_si256(xr));
        __m256i b = _mm256_maddubs_epi16(hi[0], _mm256_loadu_si256(xr + 4));
        for (int c = 1; c < 4; c++) {
            a = _mm256_add_epi16(a, _mm256_maddubs_epi16(lo[c], _mm256_loadu_si256(xr + c)));
            b = _mm256_add_epi16(b, _mm256_maddubs_epi16(hi[c], _mm256_loadu_si256(xr + 4 + c)));
        }
        sums[r] = (kq_i8)_mm256_add_epi32(_mm256_madd_epi16(a, sc_lo), _mm256_madd_epi16(b, sc_hi));
    }
}
#define KQ_X_LAYOUT KQ_X_T256

#if defined(__AVX512F__)
#define KQ_VNNI_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni")))
#endif

#else /* NEON */
/* 16 codes of a sub-block times 16 inputs, 4 int32 lanes: sdot, or smull/smlal and saddlp on ARMv8.0. */
static inline __attribute__((always_inline)) int32x4_t kq_dot16(uint8x16_t codes, const int8_t *x) {
    int8x16_t w = vreinterpretq_s8_u8(codes), xs = vld1q_s8(x);
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(vdupq_n_s32(0), w, xs);
#else
    return vpaddlq_s16(vmlal_s8(vmull_s8(vget_low_s8(w), vget_low_s8(xs)), vget_high_s8(w), vget_high_s8(xs)));
#endif
}

/* NEON, x in KQ_X_NATURAL: 32 code bytes a step, each nibble's 32 codes by 32 inputs, mla by the sub-block's scale. */
static inline __attribute__((always_inline)) void kq_sums(
        int rows, kq_i8 *sums, const uint8_t *qs, uint64_t sc, const int8_t *x) {
    const uint8x16_t mask = vdupq_n_u8(0x0F);
    int32x4_t lo_acc[KQ_MAX_ROWS], hi_acc[KQ_MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        lo_acc[r] = vdupq_n_s32(0);
        hi_acc[r] = vdupq_n_s32(0);
    }
    for (int p = 0; p < KQ_SUBS / 2; p++) {
        uint8x16_t b0 = vld1q_u8(qs + 32 * p), b1 = vld1q_u8(qs + 32 * p + 16);
        uint8x16_t l0 = vandq_u8(b0, mask), l1 = vandq_u8(b1, mask), h0 = vshrq_n_u8(b0, 4), h1 = vshrq_n_u8(b1, 4);
        int sc_lo = (int)((sc >> (16 * p)) & 0xFF), sc_hi = (int)((sc >> (16 * p + 8)) & 0xFF);
        for (int r = 0; r < rows; r++) {
            const int8_t *xr = x + r * KQ_WEIGHTS + 64 * p;
            lo_acc[r] = vmlaq_n_s32(lo_acc[r], vaddq_s32(kq_dot16(l0, xr), kq_dot16(l1, xr + 16)), sc_lo);
            hi_acc[r] = vmlaq_n_s32(hi_acc[r], vaddq_s32(kq_dot16(h0, xr + 32), kq_dot16(h1, xr + 48)), sc_hi);
        }
    }
    for (int r = 0; r < rows; r++) {
        memcpy(&sums[r], &lo_acc[r], sizeof lo_acc[r]);
        memcpy((char *)&sums[r] + sizeof lo_acc[r], &hi_acc[r], sizeof hi_acc[r]);
    }
}
#define KQ_X_LAYOUT KQ_X_NATURAL
#endif

#endif
