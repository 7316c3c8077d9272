/**
 * Download of Hugging Face hub models into the cache shared with Python's {@code huggingface_hub}
 * ({@code ~/.cache/huggingface/hub}), in pure Java. Start with {@link
 * io.github.djlllmzoo.zoo.hub.HubClient#fromEnvironment()} and {@link
 * io.github.djlllmzoo.zoo.hub.HubClient#snapshot(String, String)}.
 *
 * @serial exclude
 */
package io.github.djlllmzoo.zoo.hub;
