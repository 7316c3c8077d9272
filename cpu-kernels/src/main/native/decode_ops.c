/*
 * The elementwise operations of a decode step or a prefill, each one vectorized pass (simd.h): RMSNorm
 * (Llama's and Gemma's 1 + w form), LayerNorm (GPT-2's), the rotary embedding of query or key heads (a decode
 * step's both in one call), the MLP's activation (SiLU or GELU-tanh, times the up projection where there is one),
 * and a step's greedy pick (each row's argmax of the logits).
 *
 * PyTorch computes each as a chain of engine calls (an RMSNorm is six, a rotation five, GELU-tanh
 * six), each a JNI call with an output array of its own; at a decode step's few rows that fixed
 * cost, not the arithmetic, is the time, and at a prefill's rows each pass runs on one core
 * (docs/PERFORMANCE.md). Here each is one call writing one output, in the reference's order of
 * operations, over a range of rows, elements or heads that Java hands each core.
 *
 * Called by io.github.djlllmzoo.cpu.DecodeOps with direct buffers over PyTorch tensors that Java
 * has checked: float32, contiguous, the sizes below. One source for every instruction set, compiled
 * once per target (build.sh).
 */
#include <jni.h>
#include <math.h>
#include <stddef.h>

#include "simd.h"

/* Activations.java's names: 0 SiLU, 1 GELU-tanh (as x sigmoid(2 sqrt(2/pi) x (1 + 0.044715 x^2))). */
#define SILU 0
#define GELU_TANH 1

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
                centred = vtail(centred, left);
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

/* Rotates query heads q (B, Hq, T, D) and key heads k (B, Hk, T, D), both dense, in place: rotate() over each. */
static void rotate_pair(float *q, float *k, const float *cos, const float *sin, int batch, int q_heads, int k_heads,
        int positions, int d, int per_sequence) {
    rotate(q, cos, sin, q, q_heads, positions, d, per_sequence, 0, 0, batch * q_heads);
    rotate(k, cos, sin, k, k_heads, positions, d, per_sequence, 0, 0, batch * k_heads);
}

/* Rows of arg max written to Java at once. */
#define ARG_MAX_ROWS 64

/*
 * The index of the largest of x[0, n), the first on ties, or of the first NaN where there is one: the
 * engine's argmax. One vector pass for the maximum (vmax keeps the running maximum where an element is
 * NaN, so NaNs are flagged apart), one for the first vector holding it: an element above the float
 * just below the maximum equals it.
 */
static long arg_max(const float *x, long n) {
    vf running = vset1(-__builtin_inff());
    vi unordered = (vi)vzero();
    long k = 0;
    for (; k + VL <= n; k += VL) {
        vf v = vload(x + k);
        running = vmax(v, running);
        unordered |= v != v;
    }
    float max = -__builtin_inff();
    int nan = 0;
    for (int l = 0; l < VL; l++) {
        max = running[l] > max ? running[l] : max;
        nan |= unordered[l] != 0;
    }
    for (; k < n; k++) {
        max = x[k] > max ? x[k] : max;
        nan |= x[k] != x[k];
    }
    if (nan) {
        for (long i = 0; i < n; i++) {
            if (x[i] != x[i]) {
                return i;
            }
        }
    }
    if (max == -__builtin_inff()) {
        return 0; /* every element is -infinity: the first */
    }
    float below = nextafterf(max, -__builtin_inff());
    for (k = 0; k + VL <= n; k += VL) {
        unsigned hits = vabove(vload(x + k), below);
        if (hits != 0) {
            return k + __builtin_ctz(hits);
        }
    }
    for (; k < n; k++) {
        if (x[k] == max) {
            return k;
        }
    }
    return 0;
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

JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_DecodeOps_rotatePair(JNIEnv *env, jclass cls,
        jobject q_buffer, jobject k_buffer, jobject cos_buffer, jobject sin_buffer, jint batch, jint q_heads,
        jint k_heads, jint positions, jint head_dim, jboolean per_sequence) {
    (void)cls;
    float *q = address(env, q_buffer);
    float *k = address(env, k_buffer);
    const float *cos = address(env, cos_buffer);
    const float *sin = address(env, sin_buffer);
    if (q == NULL || k == NULL || cos == NULL || sin == NULL || batch < 0 || q_heads < 0 || k_heads < 0
            || positions < 0 || head_dim < 2 || head_dim % 2 != 0) {
        refuse(env, "rotate pair: an array's memory is not reachable, head_dim is not even, or a size is negative");
        return;
    }
    rotate_pair(q, k, cos, sin, batch, q_heads, k_heads, positions, head_dim, per_sequence);
}

JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_DecodeOps_argMax(JNIEnv *env, jclass cls,
        jobject x_buffer, jint rows, jint width, jlongArray out) {
    (void)cls;
    const float *x = address(env, x_buffer);
    if (x == NULL || rows < 0 || width < 1 || out == NULL || (*env)->GetArrayLength(env, out) < rows) {
        refuse(env, "arg max: the array's memory is not reachable, a row is empty, or the output is short");
        return;
    }
    jlong picked[ARG_MAX_ROWS];
    for (int first = 0; first < rows; first += ARG_MAX_ROWS) {
        int count = rows - first < ARG_MAX_ROWS ? rows - first : ARG_MAX_ROWS;
        for (int r = 0; r < count; r++) {
            picked[r] = arg_max(x + (size_t)(first + r) * width, width);
        }
        (*env)->SetLongArrayRegion(env, out, first, count, picked);
    }
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
