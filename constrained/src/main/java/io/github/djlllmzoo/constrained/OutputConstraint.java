package io.github.djlllmzoo.constrained;

import java.io.Serializable;
import java.util.List;
import java.util.Objects;

/**
 * What a generated output may be: a JSON Schema, any JSON object, a regular expression, a literal
 * text, or a sequence, choice or repetition of these. An immutable, serializable description (the schema
 * text itself, not a compiled automaton), so it travels inside a generation config (Spark
 * serializes those); {@link ConstraintCompiler} turns it into a matcher over a vocabulary.
 *
 * <p>A literal may be produced either byte by byte or by one special or added token of the
 * tokenizer whose text equals it (Qwen's {@code <tool_call>}, Mistral's {@code [TOOL_CALLS]});
 * special tokens are never allowed inside a JSON value or a regular expression's match.
 */
public sealed interface OutputConstraint extends Serializable {

    /**
     * Output that is one JSON value valid against a schema (OpenAI's strict-mode subset and more;
     * see {@link JsonSchemaCompiler}).
     *
     * @param schemaJson the schema as JSON text
     * @return the constraint
     */
    static OutputConstraint jsonSchema(String schemaJson) {
        return new JsonSchema(schemaJson);
    }

    /**
     * Output that is any JSON object (OpenAI's {@code response_format: json_object}).
     *
     * @return the constraint
     */
    static OutputConstraint anyJsonObject() {
        return new AnyJsonObject();
    }

    /**
     * Output whose whole text matches a regular expression (a subset of Java's syntax: literals,
     * classes, {@code . \d \w \s}, groups, {@code |}, {@code * + ? {m,n}}).
     *
     * @param pattern the expression
     * @return the constraint
     */
    static OutputConstraint regex(String pattern) {
        return new Regex(pattern);
    }

    /**
     * Output that is exactly this text.
     *
     * @param text the text
     * @return the constraint
     */
    static OutputConstraint literal(String text) {
        return new Literal(text);
    }

    /**
     * Output that is each part in turn.
     *
     * @param parts the parts
     * @return the constraint
     */
    static OutputConstraint sequence(OutputConstraint... parts) {
        return new Sequence(List.of(parts));
    }

    /**
     * Output that is any one of the choices (e.g. a tool call or an answer in a JSON schema).
     *
     * @param choices the choices (at least one)
     * @return the constraint
     */
    static OutputConstraint anyOf(OutputConstraint... choices) {
        return new AnyOf(List.of(choices));
    }

    /**
     * Output that is {@code item} repeated between {@code min} and {@code max} times, with {@code
     * separatorLiteral} between two repetitions.
     *
     * @param item the repeated part
     * @param separatorLiteral the text between repetitions (may be empty)
     * @param min the fewest repetitions (≥ 0)
     * @param max the most repetitions (≥ max(min, 1)), or {@link Integer#MAX_VALUE} for no bound
     * @return the constraint
     */
    static OutputConstraint repeat(OutputConstraint item, String separatorLiteral, int min, int max) {
        return new Repeat(item, separatorLiteral, min, max);
    }

    /**
     * A JSON value valid against a schema.
     *
     * @param schemaJson the schema as JSON text
     */
    record JsonSchema(String schemaJson) implements OutputConstraint {
        /**
         * Checks the schema text is given.
         *
         * @param schemaJson the schema as JSON text
         */
        public JsonSchema {
            Objects.requireNonNull(schemaJson, "schemaJson");
        }
    }

    /** Any JSON object. */
    record AnyJsonObject() implements OutputConstraint {}

    /**
     * Text matching a regular expression.
     *
     * @param pattern the expression
     */
    record Regex(String pattern) implements OutputConstraint {
        /**
         * Checks the pattern is given.
         *
         * @param pattern the expression
         */
        public Regex {
            Objects.requireNonNull(pattern, "pattern");
        }
    }

    /**
     * Exactly this text.
     *
     * @param text the text
     */
    record Literal(String text) implements OutputConstraint {
        /**
         * Checks the text is given.
         *
         * @param text the text
         */
        public Literal {
            Objects.requireNonNull(text, "text");
        }
    }

    /**
     * Each part in turn.
     *
     * @param parts the parts
     */
    record Sequence(List<OutputConstraint> parts) implements OutputConstraint {
        /**
         * Copies the parts.
         *
         * @param parts the parts
         */
        public Sequence {
            parts = List.copyOf(parts);
        }
    }

    /**
     * Any one of the choices.
     *
     * @param choices the choices
     */
    record AnyOf(List<OutputConstraint> choices) implements OutputConstraint {
        /**
         * Copies the choices and checks there is one.
         *
         * @param choices the choices
         */
        public AnyOf {
            choices = List.copyOf(choices);
            if (choices.isEmpty()) {
                throw new IllegalArgumentException("anyOf needs at least one choice");
            }
        }
    }

    /**
     * A part repeated, with a separator between repetitions.
     *
     * @param item the repeated part
     * @param separatorLiteral the text between repetitions
     * @param min the fewest repetitions
     * @param max the most repetitions ({@link Integer#MAX_VALUE}: no bound)
     */
    record Repeat(OutputConstraint item, String separatorLiteral, int min, int max)
            implements OutputConstraint {
        /**
         * Checks the bounds.
         *
         * @param item the repeated part
         * @param separatorLiteral the text between repetitions
         * @param min the fewest repetitions
         * @param max the most repetitions ({@link Integer#MAX_VALUE}: no bound)
         */
        public Repeat {
            Objects.requireNonNull(item, "item");
            Objects.requireNonNull(separatorLiteral, "separatorLiteral");
            if (min < 0 || max < Math.max(min, 1)) {
                throw new IllegalArgumentException(
                        "repeat needs 0 <= min <= max and max >= 1, got min " + min + ", max " + max);
            }
        }
    }
}
