/**
 * Decoder language models as DJL {@link ai.djl.nn.Block}s, on DJL's NDArray API only: {@link
 * io.github.djlllmzoo.blocks.CausalLmBlock} (a {@link io.github.djlllmzoo.blocks.Gpt2Model} or
 * {@link io.github.djlllmzoo.blocks.LlamaModel} with its LM head) built from {@link
 * io.github.djlllmzoo.blocks.DecoderLayer}s, attention ({@link io.github.djlllmzoo.blocks.Gpt2Attention},
 * {@link io.github.djlllmzoo.blocks.GroupedQueryAttention}) over a {@link
 * io.github.djlllmzoo.blocks.KvCache}, norms, MLPs and the rotary embedding. Children are named as
 * in Hugging Face checkpoints, so weights load by name.
 *
 * <p>Faster operations come through the {@link io.github.djlllmzoo.blocks.Kernels} seam, chosen once
 * per model by a {@link io.github.djlllmzoo.blocks.KernelsProvider} ({@link
 * io.github.djlllmzoo.blocks.EngineKernels} is the reference). Weights can be held compressed
 * ({@link io.github.djlllmzoo.blocks.WeightFormat}) and adapted with LoRA ({@link
 * io.github.djlllmzoo.blocks.LoraAdapter}).
 *
 * @serial exclude
 */
package io.github.djlllmzoo.blocks;
