package io.github.djlllmzoo.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The Jinja2 constructs chat templates rely on, one at a time, rendered by {@link ChatTemplate}
 * and compared with Python's Jinja2 (Hugging Face's settings) at test time: whitespace control,
 * {@code trim_blocks} and {@code lstrip_blocks}, comments, Python's string methods, {@code
 * namespace()}, reversing slices.
 */
class Jinja2SemanticsTest {

    private static final List<ChatMessage> MESSAGES =
            List.of(
                    new ChatMessage("system", "  sys  "),
                    new ChatMessage("user", "a</think>\n\nb"),
                    new ChatMessage("assistant", "x.y.z"));

    private static final List<String[]> CASES =
            List.of(
                    new String[] {"minus trims both sides", "a   {{- 'b' -}}   c  {%- if true -%}  d  {%- endif %}"},
                    new String[] {"trim_blocks eats one newline", "{% if true %}\n\nx\n{% endif %}\ny"},
                    new String[] {"lstrip_blocks strips the indentation of a tag", "a\n    {% if true %}\n    b\n    {% endif %}\nc"},
                    new String[] {"lstrip_blocks leaves text before a tag", "a  {% if true %}b{% endif %}"},
                    new String[] {"lstrip_blocks leaves output tags alone", "\n    {{ 'x' }}\n"},
                    new String[] {"plus disables lstrip", "a\n    {%+ if true %}b{% endif %}"},
                    new String[] {"comments and their whitespace", "a\n  {# gone #}\nb {#- also -#} c"},
                    new String[] {"final newline dropped", "x\n"},
                    new String[] {"string literal holding closers", "{{ '}}' + \"%}\" }}{% set s = '{% x %}' %}{{ s }}"},
                    new String[] {"strip with characters", "[{{ messages[0].content.strip() }}][{{ '\\n\\nx\\n'.strip('\\n') }}][{{ 'xxay'.lstrip('x') }}][{{ 'ayyx'.rstrip('xy') }}]"},
                    new String[] {"split is by text, not pattern", "{{ messages[2].content.split('.') | length }}{{ messages[1].content.split('</think>')[-1].lstrip('\\n') }}{{ ' a  b '.split() | join('|') }}"},
                    new String[] {"startswith endswith", "{{ messages[1].content.startswith('a<') }}{{ messages[1].content.endswith('c') }}"},
                    new String[] {"namespace with computed values", "{% set ns = namespace(n=messages|length - 1, seen=false) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.seen = true %}{% set ns.n = loop.index0 %}{% endif %}{% endfor %}{{ ns.n }}{{ ns.seen }}"},
                    new String[] {"reversed slice", "{% for m in messages[::-1] %}{{ loop.index0 }}{{ m.role }}{% endfor %}"},
                    new String[] {"content is never template source", "{{ messages[1].content }}{{ '{{ 1 }}' }}"},
                    new String[] {"values print as Python's str()", "{{ true }} {{ false }} {{ [1, 'a', true] }} {{ {'k': 'v'} }} {{ 3 }} {{ missing }}"},
                    new String[] {"for with a condition counts only the items that pass", "{% for m in messages if m.role != 'system' %}{{ loop.index }}{{ m.role }}{{ loop.first }}{{ loop.last }}{{ loop.length }},{% endfor %}"},
                    new String[] {"for with a condition that nothing passes", "[{% for m in messages if m.role == 'tool' %}x{% endfor %}]{% for c in ' a  c '.split(' ') if c %}{{ c }}{{ loop.index }}{% endfor %}"},
                    new String[] {"for with a condition over several targets", "{% for k, v in {'a': 1, 'b': 2, 'c': 3}.items() if v != 2 %}{{ loop.index }}{{ k }}{{ v }}{% endfor %}"},
                    new String[] {"for with a condition holding a conditional and strings", "{% for m in messages if (m.role if m.content else 'x') in ['user', 'assistant'] and ' if ' not in m.role %}{{ m.role }}{% endfor %}"},
                    new String[] {"string indexing by character", "[{{ messages[0].content[0] }}][{{ messages[2].content[-1] }}][{{ 'h\u00e9llo'[1] }}][{{ 'ab'[5] }}]{% if messages[1].content[0] == 'a' %}yes{% endif %}"},
                    new String[] {"tojson as transformers' filter", "{{ messages[0] | tojson }} {{ {'a': [1, 2.5, true, none, 1e-05, 1e20], 'b': 'h\u00e9 \"q\" \\\\ \n \t'} | tojson }} {{ [] | tojson }}{{ {} | tojson }}"},
                    new String[] {"tojson with its arguments", "{{ {'b': [1, {'c': 2}], 'a': {}} | tojson(indent=2) }}|{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}|{{ [1, 2] | tojson(separators=[',', ':']) }}|{{ 'h\u00e9' | tojson(ensure_ascii=true) }}|{{ [1, [2]] | tojson(none, 1) }}"},
                    new String[] {"raw blocks are kept verbatim", "a\n  {% raw %}\n{{ x }}{% if %}\n  {% endraw %}\nb{%- raw -%}  {{ y }}  {%- endraw -%}  z{% raw %}{# c #}{% endraw %}"});

    @TestFactory
    Stream<DynamicTest> eachConstructRendersAsJinja2Does() throws Exception {
        String unavailable = Jinja2Reference.unavailableReason();
        Assumptions.assumeTrue(
                unavailable == null, "skipped, no reference renderer: " + unavailable);
        JsonArray request = new JsonArray();
        for (String[] c : CASES) {
            JsonArray messages = new JsonArray();
            for (ChatMessage m : MESSAGES) {
                JsonObject message = new JsonObject();
                message.addProperty("role", m.role());
                message.addProperty("content", m.content());
                messages.add(message);
            }
            JsonObject context = new JsonObject();
            context.add("messages", messages);
            context.addProperty("add_generation_prompt", true);
            JsonObject jinja2Case = new JsonObject();
            jinja2Case.addProperty("template", c[1]);
            jinja2Case.add("context", context);
            request.add(jinja2Case);
        }
        List<Jinja2Reference.Result> expected = Jinja2Reference.render(request);
        List<DynamicTest> tests = new ArrayList<>();
        for (int i = 0; i < CASES.size(); i++) {
            String[] c = CASES.get(i);
            Jinja2Reference.Result reference = expected.get(i);
            tests.add(
                    DynamicTest.dynamicTest(
                            c[0],
                            () -> {
                                assertEquals(null, reference.error(), "Jinja2 failed");
                                assertEquals(
                                        reference.output(),
                                        ChatTemplate.of(c[1], Map.of()).render(MESSAGES));
                            }));
        }
        return tests.stream();
    }

    @Test
    void strftimeNowFormatsTheLocalTimeAsPythonsStrftime() {
        String format = "%Y-%m-%d %a %A %b %B %j %%";
        DateTimeFormatter java =
                DateTimeFormatter.ofPattern("yyyy-MM-dd EEE EEEE MMM MMMM DDD '%'", Locale.ENGLISH);
        String before = java.format(LocalDate.now());
        String rendered =
                ChatTemplate.of("{{ strftime_now('" + format + "') }}", Map.of()).render(MESSAGES);
        String after = java.format(LocalDate.now());
        assertTrue(rendered.equals(before) || rendered.equals(after), rendered + " vs " + before);
        IllegalArgumentException e =
                org.junit.jupiter.api.Assertions.assertThrows(
                        IllegalArgumentException.class,
                        () -> ChatTemplate.of("{{ strftime_now('%Q') }}", Map.of()).render(MESSAGES));
        assertTrue(e.getMessage().contains("%Q is not supported"), e.getMessage());
    }

    @Test
    void anUnclosedTagIsRefusedNamingWhere() {
        IllegalArgumentException e =
                org.junit.jupiter.api.Assertions.assertThrows(
                        IllegalArgumentException.class, () -> ChatTemplate.of("ab{{ x", Map.of()));
        assertEquals("the chat template has an unclosed '{{' at character 2", e.getMessage());
    }

    @Test
    void aRawBlockWithoutEndrawIsRefusedNamingWhere() {
        IllegalArgumentException e =
                org.junit.jupiter.api.Assertions.assertThrows(
                        IllegalArgumentException.class,
                        () -> ChatTemplate.of("ab{% raw %}{{ x }}", Map.of()));
        assertEquals(
                "the chat template has a '{% raw %}' without '{% endraw %}' at character 2",
                e.getMessage());
    }
}
