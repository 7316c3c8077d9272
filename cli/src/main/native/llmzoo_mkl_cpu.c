/*
 * libllmzoo-mkl-cpu: lets Intel oneMKL, linked into PyTorch's CPU library, use the AVX2 and
 * AVX-512 kernels that the CPU supports when the CPU is not made by Intel.
 *
 * oneMKL picks its kernels by asking mkl_serv_intel_cpu_true() whether the CPU is Intel's, and on
 * any other CPU (AMD EPYC and Ryzen among them) runs generic kernels: on the machine of
 * docs/PERFORMANCE.md a float32 matrix product of 8 rows by 768x3072 took 0.78 ms with them and
 * 0.21 ms with the AVX-512 kernels. libtorch_cpu.so exports that function and calls it through its
 * procedure linkage table, so a library preloaded ahead of it (LD_PRELOAD) answers in its place.
 * Past this check oneMKL still reads the CPU's feature flags and uses only instructions the CPU
 * has. bin/llmzoo builds this file and preloads it on AMD CPUs; LLMZOO_MKL_CPU_FIX=off turns that
 * off.
 */
int mkl_serv_intel_cpu_true(void) {
    return 1;
}
