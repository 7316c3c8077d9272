/**
 * The configurations of the model families, read from a checkpoint's {@code config.json} by {@link
 * io.github.djlllmzoo.blocks.config.Configs#read(java.nio.file.Path)}: {@link
 * io.github.djlllmzoo.blocks.config.Gpt2Config} for GPT-2 and {@link
 * io.github.djlllmzoo.blocks.config.LlamaConfig} for the Llama-shaped families ({@link
 * io.github.djlllmzoo.blocks.config.LlamaFamily} says what each {@code model_type} changes). Fields
 * the project does not implement are refused naming the field; {@link
 * io.github.djlllmzoo.blocks.config.CheckpointFiles} spells a checkpoint directory's file names.
 *
 * @serial exclude
 */
package io.github.djlllmzoo.blocks.config;
