/*
 * One projection's LoRA update over a batch whose rows each have an adapter of their own (the rows of
 * a continuous batch serving several adapters and the base model, S-LoRA's and Punica's case), added
 * into the frozen projection's output in place: for each position u of batch row b,
 *     down = scale_b * x_u A[first_b, first_b + rank_b)^T      (rank_b floats)
 *     y_u += down B^T[first_b, first_b + rank_b)
 * with A (R, in) and B^T (R, out) the pairs of the batch's adapters concatenated along the rank
 * (io.github.djlllmzoo.blocks.LoraRowPairs). A row reads only its own adapter's rank columns, and a row
 * without an update (rank 0) reads nothing: each position's result is what it is alone, at any batch
 * size. The engine computes the same as four calls over every row and every adapter's columns, a mask
 * zeroing the others (Kernels.loraUpdate's reference); at a decode step's few rows the calls' fixed cost,
 * not the arithmetic (a rank-8 update is 2 r (in + out) flops a row), is the time.
 *
 * down is rounded to float32 before the second product, as the engine's form rounds it. Each output
 * block of VL * OUT_BLOCK floats is read and written once, its sums over the rank kept in registers.
 *
 * Called by io.github.djlllmzoo.cpu.LoraUpdate with direct buffers over PyTorch tensors that Java has
 * checked: float32, contiguous, the sizes below. One source for every instruction set, compiled once
 * per target (build.sh).
 */
#include <jni.h>
#include <stddef.h>
#include <stdlib.h>
#include "simd.h"

/* Independent sums of one dot product x_u . A_j: enough multiply-adds in flight to cover their latency. */
#define CHAINS 4
/* Vectors of an output block kept in registers while the rank's rows of B^T are added into them. */
#define OUT_BLOCK 4
/* The rank columns a position's down product holds at once; a larger rank is taken in pieces. */
#define RANK_PIECE 64

static float dot(const float *x, const float *a, int in) {
    vf acc[CHAINS] = {vzero(), vzero(), vzero(), vzero()};
    int k = 0;
    for (; k + CHAINS * VL <= in; k += CHAINS * VL) {
        for (int c = 0; c < CHAINS; c++) {
            acc[c] = vload(x + k + c * VL) * vload(a + k + c * VL) + acc[c];
        }
    }
    for (; k < in; k += VL) {
        acc[0] = vload_n(x + k, in - k) * vload_n(a + k, in - k) + acc[0];
    }
    return vsum((acc[0] + acc[1]) + (acc[2] + acc[3]));
}

/* y_u += down . bt's rows [0, rank) (each out floats apart), one block of output columns at a time. */
static void add_up(const float *down, const float *bt, float *y, int rank, int out) {
    int o = 0;
    for (; o + OUT_BLOCK * VL <= out; o += OUT_BLOCK * VL) {
        vf acc[OUT_BLOCK];
        for (int c = 0; c < OUT_BLOCK; c++) {
            acc[c] = vload(y + o + c * VL);
        }
        for (int j = 0; j < rank; j++) {
            const float *row = bt + (size_t)j * out + o;
            vf d = vset1(down[j]);
            for (int c = 0; c < OUT_BLOCK; c++) {
                acc[c] = d * vload(row + c * VL) + acc[c];
            }
        }
        for (int c = 0; c < OUT_BLOCK; c++) {
            vstore(y + o + c * VL, acc[c]);
        }
    }
    for (; o < out; o += VL) {
        int left = out - o;
        vf acc = vload_n(y + o, left);
        for (int j = 0; j < rank; j++) {
            acc = vset1(down[j]) * vload_n(bt + (size_t)j * out + o, left) + acc;
        }
        vstore_n(y + o, acc, left);
    }
}

/* The update of positions [from, to) of the batch's rows (positions of them each). */
static void lora_update(const float *x, const float *a, const float *bt, float *y, const jint *first,
        const jint *rank, const float *scale, int positions, int in, int out, int from, int to) {
    float down[RANK_PIECE];
    for (int u = from; u < to; u++) {
        int b = u / positions;
        const float *xu = x + (size_t)u * in;
        float *yu = y + (size_t)u * out;
        for (int piece = 0; piece < rank[b]; piece += RANK_PIECE) {
            int count = rank[b] - piece < RANK_PIECE ? rank[b] - piece : RANK_PIECE;
            int column = first[b] + piece;
            for (int j = 0; j < count; j++) {
                down[j] = dot(xu, a + (size_t)(column + j) * in, in) * scale[b];
            }
            add_up(down, bt + (size_t)column * out, yu, count, out);
        }
    }
}

static void *address(JNIEnv *env, jobject buffer) {
    return buffer == NULL ? NULL : (*env)->GetDirectBufferAddress(env, buffer);
}

static void refuse(JNIEnv *env, const char *message) {
    (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"), message);
}

JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_LoraUpdate_add(JNIEnv *env, jclass cls,
        jobject x_buffer, jobject a_buffer, jobject bt_buffer, jobject y_buffer, jintArray first_array,
        jintArray rank_array, jfloatArray scale_array, jint rows, jint positions, jint in, jint out,
        jint total_rank, jint from, jint to) {
    (void)cls;
    const float *x = address(env, x_buffer);
    const float *a = address(env, a_buffer);
    const float *bt = address(env, bt_buffer);
    float *y = address(env, y_buffer);
    if (x == NULL || a == NULL || bt == NULL || y == NULL || first_array == NULL || rank_array == NULL
            || scale_array == NULL || rows < 1 || positions < 1 || in < 1 || out < 1 || total_rank < 1
            || from < 0 || to < from || (long)to > (long)rows * positions
            || (*env)->GetArrayLength(env, first_array) < rows || (*env)->GetArrayLength(env, rank_array) < rows
            || (*env)->GetArrayLength(env, scale_array) < rows) {
        refuse(env, "lora update: an array's memory is not reachable, a size is not positive, or the positions"
                " are out of range");
        return;
    }
    jint *first = malloc(sizeof(jint) * (size_t)rows * 2);
    float *scale = malloc(sizeof(float) * (size_t)rows);
    if (first == NULL || scale == NULL) {
        free(first);
        free(scale);
        refuse(env, "lora update: no memory for the rows' columns");
        return;
    }
    jint *rank = first + rows;
    (*env)->GetIntArrayRegion(env, first_array, 0, rows, first);
    (*env)->GetIntArrayRegion(env, rank_array, 0, rows, rank);
    (*env)->GetFloatArrayRegion(env, scale_array, 0, rows, scale);
    for (int b = 0; b < rows; b++) {
        if (first[b] < 0 || rank[b] < 0 || (long)first[b] + rank[b] > total_rank) {
            free(first);
            free(scale);
            refuse(env, "lora update: a row's rank columns lie outside the pairs");
            return;
        }
    }
    lora_update(x, a, bt, y, first, rank, scale, positions, in, out, from, to);
    free(first);
    free(scale);
}
