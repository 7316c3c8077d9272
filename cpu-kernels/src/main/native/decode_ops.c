/*
 * The elementwise operations of a decode step or a prefill, each one pass with AVX-512: RMSNorm
 * (Llama's and Gemma's 1 + w form), LayerNorm (GPT-2's), the rotary embedding of query or key heads, and the MLP's
 * activation (SiLU or GELU-tanh, times the up projection where there is one).
 *
 * PyTorch computes each as a chain of engine calls (an RMSNorm is six, a rotation five, GELU-tanh
 * six), each a JNI call with an output array of its own; at a decode step's few rows that fixed
 * cost, not the arithmetic, is the time, and at a prefill's rows each pass runs on one core
 * (docs/PERFORMANCE.md). Here each is one call writing one output, in the reference's order of
 * operations, over a range of rows, elements or heads that Java hands each core.
 *
 * Called by io.github.djlllmzoo.cpu.DecodeOps with direct buffers over PyTorch tensors that Java
 * has checked: float32, contiguous, the sizes below. Compiled with AVX-512 enabled; Java loads it
 * only on a CPU that has AVX-512F.
 */
#include <jni.h>
#include <stddef.h>

#if defined(__AVX512F__)
#include "vector_math.h"
#else
#include "simd.h"
#endif

/* Activations.java's names: 0 SiLU, 1 GELU-tanh (as x sigmoid(2 sqrt(2/pi) x (1 + 0.044715 x^2))). */
#define SILU 0
#define GELU_TANH 1

#if defined(__AVX512F__)

/* The lanes of the piece of n floats that starts at k: 16, or what is left. */
static inline __mmask16 lanes(int n, int k) {
    int left = n - k;
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

/* out = x * rsqrt(mean(x^2) + eps) * w (or * (1 + w)), row by row. */
static void rms_norm(const float *x, const float *w, float *out, int rows, int width, float eps,
        int unit_offset) {
    __m512 one = _mm512_set1_ps(1.0f);
    for (int r = 0; r < rows; r++) {
        const float *row = x + (size_t)r * width;
        float *o = out + (size_t)r * width;
        __m512 squares = _mm512_setzero_ps();
        for (int k = 0; k < width; k += 16) {
            __m512 v = _mm512_maskz_loadu_ps(lanes(width, k), row + k);
            squares = _mm512_fmadd_ps(v, v, squares);
        }
        float mean = _mm512_reduce_add_ps(squares) / (float)width;
        float scale = 1.0f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(mean + eps)));
        __m512 s = _mm512_set1_ps(scale);
        for (int k = 0; k < width; k += 16) {
            __mmask16 m = lanes(width, k);
            __m512 wk = _mm512_maskz_loadu_ps(m, w + k);
            if (unit_offset) {
                wk = _mm512_add_ps(wk, one);
            }
            __m512 normed = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, row + k), s);
            _mm512_mask_storeu_ps(o + k, m, _mm512_mul_ps(normed, wk));
        }
    }
}

/*
 * out = (x - mean) / sqrt(var + eps) * w + b, row by row, var the biased variance, as
 * torch.nn.functional.layer_norm. The row (3 KB for GPT-2) stays in L1 over the three passes: the
 * mean, the variance of the centred values (two passes, not one of sums and squares, so a large
 * mean cancels nothing), and the output.
 */
static void layer_norm(const float *x, const float *w, const float *b, float *out, int rows, int width,
        float eps) {
    for (int r = 0; r < rows; r++) {
        const float *row = x + (size_t)r * width;
        float *o = out + (size_t)r * width;
        __m512 sums = _mm512_setzero_ps();
        for (int k = 0; k < width; k += 16) {
            sums = _mm512_add_ps(sums, _mm512_maskz_loadu_ps(lanes(width, k), row + k));
        }
        __m512 mean = _mm512_set1_ps(_mm512_reduce_add_ps(sums) / (float)width);
        __m512 squares = _mm512_setzero_ps();
        for (int k = 0; k < width; k += 16) {
            __mmask16 m = lanes(width, k);
            __m512 centred = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, row + k), mean);
            squares = _mm512_fmadd_ps(centred, centred, squares);
        }
        float variance = _mm512_reduce_add_ps(squares) / (float)width;
        __m512 s = _mm512_set1_ps(1.0f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(variance + eps))));
        for (int k = 0; k < width; k += 16) {
            __mmask16 m = lanes(width, k);
            __m512 normed = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, row + k), mean), s);
            __m512 y = _mm512_fmadd_ps(normed, _mm512_maskz_loadu_ps(m, w + k), _mm512_maskz_loadu_ps(m, b + k));
            _mm512_mask_storeu_ps(o + k, m, y);
        }
    }
}

/*
 * out = x * cos + cat(x2, x1) * sin for the (sequence, head) units [from, to), unit u = b * heads + h,
 * of heads out (batch, heads, positions, d), with cos = cat(c, c) and sin = cat(-s, s) of (batch or
 * 1, positions, d) as RotaryEmbedding gathers them; x is laid out as out, or (batch, positions,
 * heads, d) where positions_major (the heads of a projection's rows, as a view).
 */
static void rotate(const float *x, const float *cos, const float *sin, float *out, int heads, int positions,
        int d, int per_sequence, int positions_major, int from, int to) {
    int half = d / 2;
    for (int u = from; u < to; u++) {
        int b = u / heads;
        int h = u % heads;
        for (int t = 0; t < positions; t++) {
            size_t row = ((size_t)u * positions + t) * d;
            size_t source = positions_major ? (((size_t)b * positions + t) * heads + h) * d : row;
            size_t table = ((size_t)(per_sequence ? b : 0) * positions + t) * d;
            const float *x1 = x + source;
            const float *x2 = x1 + half;
            const float *c = cos + table;
            const float *s = sin + table;
            for (int k = 0; k < half; k += 16) {
                __mmask16 m = lanes(half, k);
                __m512 a = _mm512_maskz_loadu_ps(m, x1 + k);
                __m512 z = _mm512_maskz_loadu_ps(m, x2 + k);
                __m512 first = _mm512_add_ps(_mm512_mul_ps(a, _mm512_maskz_loadu_ps(m, c + k)),
                        _mm512_mul_ps(z, _mm512_maskz_loadu_ps(m, s + k)));
                __m512 second = _mm512_add_ps(_mm512_mul_ps(z, _mm512_maskz_loadu_ps(m, c + half + k)),
                        _mm512_mul_ps(a, _mm512_maskz_loadu_ps(m, s + half + k)));
                _mm512_mask_storeu_ps(out + row + k, m, first);
                _mm512_mask_storeu_ps(out + row + half + k, m, second);
            }
        }
    }
}

/* 1 / (1 + e^-a), from e = e^-|a| so that the exponential never overflows. */
static inline __m512 sigmoid(__m512 a) {
    __m512 one = _mm512_set1_ps(1.0f);
    __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(a)));
    __mmask16 negative = _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_LT_OQ);
    __m512 numerator = _mm512_mask_blend_ps(negative, one, e);
    return _mm512_div_ps(numerator, _mm512_add_ps(one, e));
}

/* out = act(gate) * up (up NULL: act(gate)) over n floats; out may be gate (each vector is read before it is written). */
static void activate(const float *gate, const float *up, float *out, long n, int activation) {
    __m512 cubic = _mm512_set1_ps((float)(2 * 0.7978845608028654 * 0.044715));
    __m512 linear = _mm512_set1_ps((float)(2 * 0.7978845608028654));
    for (long k = 0; k < n; k += 16) {
        __mmask16 m = n - k >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - k)) - 1);
        __m512 g = _mm512_maskz_loadu_ps(m, gate + k);
        __m512 argument = g;
        if (activation == GELU_TANH) {
            argument = _mm512_mul_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(g, g), cubic), linear), g);
        }
        __m512 y = _mm512_mul_ps(sigmoid(argument), g);
        if (up != NULL) {
            y = _mm512_mul_ps(y, _mm512_maskz_loadu_ps(m, up + k));
        }
        _mm512_mask_storeu_ps(out + k, m, y);
    }
}

/*
 * out[r][offset + k] = part[r][k] (+ bias[k]) for rows of width floats into rows of out_width: one
 * core's columns of a product split across the cores, written where a join would put them.
 */
static void into_columns(const float *part, const float *bias, float *out, int rows, int width, int out_width,
        int offset) {
    for (int r = 0; r < rows; r++) {
        const float *p = part + (size_t)r * width;
        float *o = out + (size_t)r * out_width + offset;
        for (int k = 0; k < width; k += 16) {
            __mmask16 m = lanes(width, k);
            __m512 v = _mm512_maskz_loadu_ps(m, p + k);
            if (bias != NULL) {
                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + k));
            }
            _mm512_mask_storeu_ps(o + k, m, v);
        }
    }
}

#else

/* ---- the portable variant (AVX2, NEON: simd.h), the same passes VL floats at a time ---- */

static void rms_norm(const float *x, const float *w, float *out, int rows, int width, float eps,
        int unit_offset) {
    for (int r = 0; r < rows; r++) {
        const float *row = x + (size_t)r * width;
        float *o = out + (size_t)r * width;
        vf squares = vzero();
        for (int k = 0; k < width; k += VL) {
            vf v = vload_n(row + k, width - k);
            squares = v * v + squares;
        }
        float scale = 1.0f / __builtin_sqrtf(vsum(squares) / (float)width + eps);
        for (int k = 0; k < width; k += VL) {
            int left = width - k;
            vf wk = vload_n(w + k, left);
            if (unit_offset) {
                wk = wk + 1.0f;
            }
            vstore_n(o + k, (vload_n(row + k, left) * scale) * wk, left);
        }
    }
}

static void layer_norm(const float *x, const float *w, const float *b, float *out, int rows, int width,
        float eps) {
    for (int r = 0; r < rows; r++) {
        const float *row = x + (size_t)r * width;
        float *o = out + (size_t)r * width;
        vf sums = vzero();
        for (int k = 0; k < width; k += VL) {
            sums = sums + vload_n(row + k, width - k);
        }
        float mean = vsum(sums) / (float)width;
        vf squares = vzero();
        for (int k = 0; k < width; k += VL) {
            int left = width - k;
            vf centred = vload_n(row + k, left) - mean;
            if (left < VL) {
                centred = vblend((vi){0, 1, 2, 3, 4, 5, 6, 7} < left, centred, vzero());
            }
            squares = centred * centred + squares;
        }
        float s = 1.0f / __builtin_sqrtf(vsum(squares) / (float)width + eps);
        for (int k = 0; k < width; k += VL) {
            int left = width - k;
            vf normed = (vload_n(row + k, left) - mean) * s;
            vstore_n(o + k, normed * vload_n(w + k, left) + vload_n(b + k, left), left);
        }
    }
}

static void rotate(const float *x, const float *cos, const float *sin, float *out, int heads, int positions,
        int d, int per_sequence, int positions_major, int from, int to) {
    int half = d / 2;
    for (int u = from; u < to; u++) {
        int b = u / heads;
        int h = u % heads;
        for (int t = 0; t < positions; t++) {
            size_t row = ((size_t)u * positions + t) * d;
            size_t source = positions_major ? (((size_t)b * positions + t) * heads + h) * d : row;
            size_t table = ((size_t)(per_sequence ? b : 0) * positions + t) * d;
            const float *x1 = x + source;
            const float *x2 = x1 + half;
            const float *c = cos + table;
            const float *s = sin + table;
            for (int k = 0; k < half; k += VL) {
                int left = half - k;
                vf a = vload_n(x1 + k, left);
                vf z = vload_n(x2 + k, left);
                vstore_n(out + row + k, a * vload_n(c + k, left) + z * vload_n(s + k, left), left);
                vstore_n(out + row + half + k, z * vload_n(c + half + k, left) + a * vload_n(s + half + k, left), left);
            }
        }
    }
}

static void activate(const float *gate, const float *up, float *out, long n, int activation) {
    const float cubic = (float)(2 * 0.7978845608028654 * 0.044715);
    const float linear = (float)(2 * 0.7978845608028654);
    for (long k = 0; k < n; k += VL) {
        int left = n - k >= VL ? VL : (int)(n - k);
        vf g = vload_n(gate + k, left);
        vf argument = g;
        if (activation == GELU_TANH) {
            argument = ((g * g) * cubic + linear) * g;
        }
        vf y = vsigmoid(argument) * g;
        if (up != NULL) {
            y = y * vload_n(up + k, left);
        }
        vstore_n(out + k, y, left);
    }
}

static void into_columns(const float *part, const float *bias, float *out, int rows, int width, int out_width,
        int offset) {
    for (int r = 0; r < rows; r++) {
        const float *p = part + (size_t)r * width;
        float *o = out + (size_t)r * out_width + offset;
        for (int k = 0; k < width; k += VL) {
            int left = width - k;
            vf v = vload_n(p + k, left);
            if (bias != NULL) {
                v = v + vload_n(bias + k, left);
            }
            vstore_n(o + k, v, left);
        }
    }
}

#endif

static void *address(JNIEnv *env, jobject buffer) {
    return buffer == NULL ? NULL : (*env)->GetDirectBufferAddress(env, buffer);
}

static void refuse(JNIEnv *env, const char *message) {
    (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"), message);
}

/* DecodeOps' numbers for a norm. */
#define RMS_NORM 0
#define RMS_NORM_UNIT_OFFSET 1
#define LAYER_NORM 2

JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_DecodeOps_norm(JNIEnv *env, jclass cls,
        jobject x_buffer, jobject weight_buffer, jobject bias_buffer, jobject out_buffer, jint rows, jint width,
        jfloat eps, jint kind) {
    (void)cls;
    const float *x = address(env, x_buffer);
    const float *w = address(env, weight_buffer);
    const float *b = address(env, bias_buffer);
    float *out = address(env, out_buffer);
    if (x == NULL || w == NULL || out == NULL || rows < 0 || width < 1
            || (kind != RMS_NORM && kind != RMS_NORM_UNIT_OFFSET && kind != LAYER_NORM)
            || (kind == LAYER_NORM && b == NULL)) {
        refuse(env, "norm: an array's memory is not reachable, the sizes are not positive, or the norm is unknown");
        return;
    }
    if (kind == LAYER_NORM) {
        layer_norm(x, w, b, out, rows, width, eps);
    } else {
        rms_norm(x, w, out, rows, width, eps, kind == RMS_NORM_UNIT_OFFSET);
    }
}

JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_DecodeOps_intoColumns(JNIEnv *env, jclass cls,
        jobject part_buffer, jobject bias_buffer, jobject out_buffer, jint rows, jint width, jint out_width,
        jint offset) {
    (void)cls;
    const float *part = address(env, part_buffer);
    const float *bias = address(env, bias_buffer);
    float *out = address(env, out_buffer);
    if (part == NULL || out == NULL || (bias_buffer != NULL && bias == NULL) || rows < 0 || width < 0
            || offset < 0 || (long)offset + width > out_width) {
        refuse(env, "into columns: an array's memory is not reachable, or the columns are out of range");
        return;
    }
    into_columns(part, bias, out, rows, width, out_width, offset);
}

JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_DecodeOps_rotate(JNIEnv *env, jclass cls,
        jobject x_buffer, jobject cos_buffer, jobject sin_buffer, jobject out_buffer, jint batch, jint heads,
        jint positions, jint head_dim, jboolean per_sequence, jboolean positions_major, jint from, jint to) {
    (void)cls;
    const float *x = address(env, x_buffer);
    const float *cos = address(env, cos_buffer);
    const float *sin = address(env, sin_buffer);
    float *out = address(env, out_buffer);
    if (x == NULL || cos == NULL || sin == NULL || out == NULL || batch < 0 || heads < 0 || positions < 0
            || head_dim < 2 || head_dim % 2 != 0 || from < 0 || to < from || (long)to > (long)batch * heads) {
        refuse(env, "rotate: an array's memory is not reachable, head_dim is not even, or the units are out of range");
        return;
    }
    rotate(x, cos, sin, out, heads, positions, head_dim, per_sequence, positions_major, from, to);
}

JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_DecodeOps_activate(JNIEnv *env, jclass cls,
        jobject gate_buffer, jobject up_buffer, jobject out_buffer, jlong size, jint activation) {
    (void)cls;
    const float *gate = address(env, gate_buffer);
    const float *up = address(env, up_buffer);
    float *out = address(env, out_buffer);
    if (gate == NULL || out == NULL || (up_buffer != NULL && up == NULL) || size < 0
            || (activation != SILU && activation != GELU_TANH)) {
        refuse(env, "activate: an array's memory is not reachable, or the activation is unknown");
        return;
    }
    activate(gate, up, out, size, activation);
}

/*
 * A gated MLP's activation on one core's columns [from, to) of rows of width floats, in place:
 * gate_out = act(gate_out) * up, where gate_out holds the gate's product and up the up projection's
 * (io.github.djlllmzoo.cpu.FusedProducts, after each core's own columns of both products).
 */
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_FusedProducts_activateColumns(JNIEnv *env, jclass cls,
        jobject gate_out_buffer, jobject up_buffer, jint rows, jint width, jint from, jint to, jint activation) {
    (void)cls;
    float *gate_out = address(env, gate_out_buffer);
    const float *up = address(env, up_buffer);
    if (gate_out == NULL || up == NULL || rows < 0 || from < 0 || to < from || to > width
            || (activation != SILU && activation != GELU_TANH)) {
        refuse(env, "activate columns: an array's memory is not reachable, the columns are out of range,"
                " or the activation is unknown");
        return;
    }
    for (int r = 0; r < rows; r++) {
        size_t at = (size_t)r * width + from;
        activate(gate_out + at, up + at, gate_out + at, to - from, activation);
    }
}
