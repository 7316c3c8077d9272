/*
 * The C library's heap: giving back to the kernel the pages of memory freed inside it (NativeHeap.java).
 * glibc keeps freed blocks in its arenas (bin/llmzoo raises its trim threshold so a decode step's
 * temporaries stay for the next step); a model's load frees tens of MB there that no step reuses.
 */
#include <jni.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* Returns whether the C library gave memory back: glibc's malloc_trim(0) over every arena; false
 * elsewhere (no such call). */
JNIEXPORT jboolean JNICALL Java_io_github_djlllmzoo_cpu_NativeHeap_trim0(JNIEnv *env, jclass cls) {
    (void) env;
    (void) cls;
#if defined(__GLIBC__)
    return malloc_trim(0) ? JNI_TRUE : JNI_FALSE;
#else
    return JNI_FALSE;
#endif
}
