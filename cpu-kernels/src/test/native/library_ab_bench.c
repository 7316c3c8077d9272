/*
 * Two builds of the kernels' library side by side (no JVM): the best of 30 interleaved rounds of a
 * few-row product (2048 x 2048, float32), a decode step's attention (32 heads, 4 KV heads, 1000
 * positions), a causal prefill attention (128 positions), an RMSNorm and the compressed GEMM of 64
 * rows by a 256 x 2048 bfloat16 and float16 weight, each through its JNI entry
 * point, for a change to a kernel measured against the library before it on a busy machine:
 *
 *   cc -O2 -I$JAVA_HOME/include -I$JAVA_HOME/include/linux -o /tmp/ab \
 *       cpu-kernels/src/test/native/library_ab_bench.c -ldl && /tmp/ab OLD.so NEW.so ROWS
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <jni.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_clock.h"
typedef struct { void *address; } Buffer;
static void *JNICALL addr(JNIEnv *e, jobject b) { (void)e; return b ? ((Buffer *)b)->address : NULL; }
static jclass JNICALL fc(JNIEnv *e, const char *n) { (void)e; return (jclass)n; }
static jint JNICALL tn(JNIEnv *e, jclass c, const char *m) { (void)e; (void)c; fprintf(stderr, "threw %s\n", m); return 0; }
static struct JNINativeInterface_ t; static JNIEnv ev; static JNIEnv *env = &ev;
static Buffer bufs[16]; static int u;
static jobject B(void *p) { if (!p) return NULL; bufs[u % 16].address = p; return (jobject)&bufs[u++ % 16]; }
typedef void (*OutIn)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jint, jint, jint, jint, jint);
typedef void (*DA)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jobject, jobject, jobject, jint, jintArray, jintArray, jint, jint, jint, jint, jint, jint, jfloat, jfloat, jint, jint);
typedef void (*PA)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jobject, jint, jint, jint, jint, jint, jint, jlong, jfloat, jfloat, jint, jint);
typedef void (*GEMM)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jobject, jint, jint, jint, jint, jint, jint);
typedef void (*NORM)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jint, jint, jfloat, jint);
static float *R(size_t n) { float *p = malloc(n * 4); for (size_t i = 0; i < n; i++) p[i] = (float)rand() / RAND_MAX - 0.5f; return p; }
int main(int argc, char **argv) {
    t.GetDirectBufferAddress = addr; t.FindClass = fc; t.ThrowNew = tn; ev = &t;
    void *h[2]; for (int i = 0; i < 2; i++) { h[i] = dlopen(argv[1 + i], RTLD_NOW | RTLD_LOCAL); if (!h[i]) { puts(dlerror()); return 1; } }
    int in = 2048, out = 2048, rows = atoi(argv[3]);
    float *x = R(8 * in), *w = R((size_t)out * in), *o = R(8 * out);
    int H = 32, KV = 4, D = 64, CAP = 1024, L = 1000;
    float *q = R(H * D), *k = R((size_t)KV * CAP * D), *v = R((size_t)KV * CAP * D), *ao = R(H * D);
    int T = 128; float *pq = R((size_t)H * T * D), *po = R((size_t)H * T * D), *mask = R((size_t)T * T);
    for (int i = 0; i < T; i++) for (int j = 0; j < T; j++) mask[i * T + j] = j <= i ? 0 : -3.4028235e38f;
    int grows = 64, gout = 256;
    unsigned short *codes = malloc((size_t)gout * in * 2);
    for (size_t i = 0; i < (size_t)gout * in; i++) codes[i] = (unsigned short)(0x3c00 + (rand() & 0x3ff)) ^ (rand() & 0x8000);
    float *gx = R((size_t)grows * in), *go = R((size_t)grows * gout);
    double best[2][6]; for (int a = 0; a < 2; a++) for (int b = 0; b < 6; b++) best[a][b] = 1e9;
    for (int round = 0; round < 30; round++) {
        for (int i = 0; i < 2; i++) {
            OutIn f = (OutIn)dlsym(h[i], "Java_io_github_djlllmzoo_cpu_FewRowProduct_multiplyOutIn");
            DA da = (DA)dlsym(h[i], "Java_io_github_djlllmzoo_cpu_DecodeAttention_attend");
            PA pa = (PA)dlsym(h[i], "Java_io_github_djlllmzoo_cpu_PrefillAttention_attend");
            NORM nm = (NORM)dlsym(h[i], "Java_io_github_djlllmzoo_cpu_DecodeOps_norm");
            double t0 = now(); for (int r = 0; r < 5; r++) f(env, NULL, B(x), B(w), NULL, B(o), rows, in, out, 0, out);
            double t1 = now(); for (int r = 0; r < 20; r++) da(env, NULL, B(q), B(k), B(v), NULL, B(ao), NULL, NULL, 0, NULL, NULL, H, KV, D, CAP, L, 0, 0.125f, 0.0f, 0, KV);
            double t2 = now(); pa(env, NULL, B(pq), B(k), B(v), B(mask), B(po), H, KV, T, T, D, CAP, 0, 0.125f, 0.0f, 0, H);
            double t3 = now(); for (int r = 0; r < 200; r++) nm(env, NULL, B(x), B(w), NULL, B(o), rows, in, 1e-5f, 0);
            double t4 = now();
            GEMM gm = (GEMM)dlsym(h[i], "Java_io_github_djlllmzoo_cpu_CompressedGemm_multiply");
            gm(env, NULL, B(gx), B(codes), NULL, NULL, B(go), 0, grows, in, gout, 0, gout);
            double t5 = now();
            gm(env, NULL, B(gx), B(codes), NULL, NULL, B(go), 1, grows, in, gout, 0, gout);
            double t6 = now();
            double d[6] = {t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5};
            for (int b = 0; b < 6; b++) if (d[b] < best[i][b]) best[i][b] = d[b];
        }
    }
    const char *names[6] = {"few-row product", "decode attention", "prefill attention", "rms norm", "bf16 GEMM 64 rows",
        "f16 GEMM 64 rows"};
    for (int b = 0; b < 6; b++) printf("%-18s old %.3f ms  new %.3f ms  new/old %.2f\n", names[b], best[0][b] * 1e3, best[1][b] * 1e3, best[1][b] / best[0][b]);
    return 0;
}
