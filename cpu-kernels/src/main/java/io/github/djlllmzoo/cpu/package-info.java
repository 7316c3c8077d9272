/**
 * Fast CPU paths behind the blocks' {@link io.github.djlllmzoo.blocks.Kernels} seam: {@link
 * io.github.djlllmzoo.cpu.CpuKernelsProvider} (found by {@link java.util.ServiceLoader}) offers
 * {@link io.github.djlllmzoo.cpu.CpuKernels} to models held on the CPU, which runs native kernels
 * where they apply and the engine's operations, as {@link io.github.djlllmzoo.blocks.EngineKernels}
 * computes them, elsewhere. The native library's instruction set is a {@link
 * io.github.djlllmzoo.cpu.CpuIsa}, chosen from the CPU or forced with {@code -Dllmzoo.cpu.isa}
 * (refused with an {@link io.github.djlllmzoo.cpu.UnsupportedCpuIsaException} when it cannot run);
 * {@link io.github.djlllmzoo.cpu.TorchThreads} reads PyTorch's thread counts.
 *
 * @serial exclude
 */
package io.github.djlllmzoo.cpu;
