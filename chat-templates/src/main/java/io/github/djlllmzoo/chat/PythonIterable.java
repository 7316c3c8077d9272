package io.github.djlllmzoo.chat;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import java.util.Map;

/**
 * Jinja2's {@code is iterable}: true for strings too, as in Python (Jinjava's says false). Llama
 * 3's templates test a tool message's content with it and write a string one through {@code
 * tojson}, quoted.
 */
final class PythonIterable implements ExpTest {

    @Override
    public String getName() {
        return "iterable";
    }

    @Override
    public boolean evaluate(Object var, JinjavaInterpreter interpreter, Object... args) {
        return var instanceof CharSequence
                || var instanceof Iterable<?>
                || var instanceof Map<?, ?>
                || (var != null && var.getClass().isArray());
    }
}
