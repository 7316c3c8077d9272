/**
 * Constrained decoding: an {@link io.github.djlllmzoo.constrained.OutputConstraint} (a JSON Schema,
 * any JSON object, a regular expression, a literal, or a sequence, choice or repetition of these)
 * compiled by {@link io.github.djlllmzoo.constrained.TokenVocabulary#compile} into a {@link
 * io.github.djlllmzoo.constrained.CompiledConstraint}, from which each generated sequence gets a
 * {@link io.github.djlllmzoo.constrained.ConstraintState} that masks the next-token logits so the
 * output stays valid. {@link io.github.djlllmzoo.constrained.RecordSchema} derives a schema from a
 * Java record (described by {@link io.github.djlllmzoo.constrained.Description}) and parses the
 * output back into it. A constraint that cannot be compiled fails with an {@link
 * io.github.djlllmzoo.constrained.InvalidConstraintException} naming the path at fault.
 *
 * @serial exclude
 */
package io.github.djlllmzoo.constrained;
