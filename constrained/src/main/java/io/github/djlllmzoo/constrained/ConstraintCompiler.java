package io.github.djlllmzoo.constrained;

import java.util.ArrayList;
import java.util.List;

/** Turns an {@link OutputConstraint} into the {@link Grammar} whose rule 0 is the whole output. */
final class ConstraintCompiler {

    private ConstraintCompiler() {}

    static Grammar compile(OutputConstraint constraint) {
        Grammar g = new Grammar();
        g.define(0, build(g, constraint));
        return g;
    }

    private static Grammar.Fragment build(Grammar g, OutputConstraint c) {
        if (c instanceof OutputConstraint.JsonSchema s) {
            return JsonSchemaCompiler.compile(g, s.schemaJson());
        } else if (c instanceof OutputConstraint.AnyJsonObject) {
            return JsonSchemaCompiler.anyObject(g);
        } else if (c instanceof OutputConstraint.Regex r) {
            // The whole output must match: anchors at the ends change nothing.
            return new RegexPattern(r.pattern(), "regex").toFragment(g, false);
        } else if (c instanceof OutputConstraint.Literal l) {
            return g.literal(l.text());
        } else if (c instanceof OutputConstraint.Sequence s) {
            List<Grammar.Fragment> parts = new ArrayList<>();
            for (OutputConstraint part : s.parts()) {
                parts.add(build(g, part));
            }
            return g.seq(parts);
        } else if (c instanceof OutputConstraint.AnyOf a) {
            List<Grammar.Fragment> choices = new ArrayList<>();
            for (OutputConstraint choice : a.choices()) {
                choices.add(build(g, choice));
            }
            return g.alt(choices);
        } else {
            OutputConstraint.Repeat r = (OutputConstraint.Repeat) c;
            int item = g.newRule();
            g.define(item, build(g, r.item()));
            Grammar.Fragment items =
                    g.seq(
                            g.call(item),
                            g.repeat(
                                    () -> g.seq(g.literal(r.separatorLiteral()), g.call(item)),
                                    Math.max(r.min() - 1, 0),
                                    r.max() == Integer.MAX_VALUE ? r.max() : r.max() - 1));
            return r.min() == 0 ? g.optional(items) : items;
        }
    }
}
