package io.github.djlllmzoo.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Locale;
import java.util.List;
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
                    new String[] {"values print as Python's str()", "{{ true }} {{ false }} {{ [1, 'a', true] }} {{ {'k': 'v'} }} {{ 3 }} {{ missing }}"});

    @TestFactory
    Stream<DynamicTest> eachConstructRendersAsJinja2Does() throws Exception {
        String unavailable = Jinja2Reference.unavailableReason();
        Assumptions.assumeTrue(
                unavailable == null, "skipped, no reference renderer: " + unavailable);
        JsonArray request = new JsonArray();
        for (String[] c : CASES) {
            JsonArray messages = OpenAiServerTest.chat(1).getAsJsonArray("messages");
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
}
