package io.github.djlllmzoo.constrained;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SchemaValidatorsConfig;
import com.networknt.schema.SpecVersion;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class RecordSchemaTest {

    enum Status {
        DRAFT,
        SENT,
        PAID
    }

    record Line(@Description("stock keeping unit") String sku, int quantity, Double price) {}

    record Customer(String name, Optional<Customer> referrer) {}

    @Description("an invoice read from an email")
    record Invoice(
            String number,
            Customer customer,
            List<Line> lines,
            Status status,
            Optional<String> note,
            Integer priority,
            long reference,
            boolean urgent,
            Map<String, Short> counts) {}

    record Unsupported(Object anything) {}

    @Test
    void aRecordsSchemaIsStrictAndNamesEveryComponent() throws Exception {
        JsonNode schema = new ObjectMapper().readTree(RecordSchema.of(Invoice.class));
        JsonNode invoice = schema.get("$defs").get(Invoice.class.getName().replace('$', '.'));
        assertEquals("an invoice read from an email", invoice.get("description").asText());
        assertEquals(9, invoice.get("required").size());
        assertEquals(false, invoice.get("additionalProperties").asBoolean());
        assertEquals("DRAFT", invoice.at("/properties/status/enum/0").asText());
        assertEquals(Integer.MAX_VALUE, invoice.at("/properties/priority/maximum").asLong());
        assertEquals("null", invoice.at("/properties/note/anyOf/1/type").asText());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RecordSchema.of(Unsupported.class));
        assertTrue(e.getMessage().contains("Unsupported.anything"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> RecordSchema.of(String.class));
    }

    /**
     * Samples of the derived schema (a random sampler that, as a model would, likes to close what
     * it opened) validate, and parse back into the record with every component set.
     */
    @Test
    void constrainedOutputsOfARecordsSchemaParseIntoTheRecord() throws Exception {
        String schemaText = RecordSchema.of(Invoice.class);
        JsonSchema validator =
                JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012)
                        .getSchema(schemaText, SchemaValidatorsConfig.builder().formatAssertionsEnabled(true).build());
        TokenVocabulary v = TestVocabularies.gpt2();
        CompiledConstraint c = v.compile(OutputConstraint.jsonSchema(schemaText));
        SplittableRandom random = new SplittableRandom(12);
        int parsed = 0;
        for (int sample = 0; sample < 20; sample++) {
            ConstraintState state = c.newState(List.of(50256));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            boolean ended = false;
            for (int step = 0; step < 400 && !ended; step++) {
                int token = closing(state.allowedTokens(), v, random);
                if (token == 50256) {
                    ended = true;
                } else {
                    state.accept(token);
                    out.writeBytes(v.bytes(token));
                }
            }
            if (!ended) {
                continue;
            }
            String text = out.toString(StandardCharsets.UTF_8);
            assertEquals(java.util.Set.of(), validator.validate(new ObjectMapper().readTree(text)), text);
            Invoice invoice = RecordSchema.parse(text, Invoice.class);
            assertNotNull(invoice.customer(), text);
            assertNotNull(invoice.note(), text);
            assertNotNull(invoice.customer().referrer(), text);
            assertNotNull(invoice.status(), text);
            parsed++;
        }
        assertTrue(parsed >= 10, "most samples end: " + parsed);
    }

    /** Uniform among the allowed tokens, but one time in three among those that hold a closing character. */
    private static int closing(BitSet allowed, TokenVocabulary v, SplittableRandom random) {
        if (allowed.get(50256) && random.nextInt(2) == 0) {
            return 50256;
        }
        if (random.nextInt(3) == 0) {
            BitSet closers = new BitSet();
            for (int id = allowed.nextSetBit(0); id >= 0; id = allowed.nextSetBit(id + 1)) {
                for (byte b : v.bytesOf(id)) {
                    if (b == '"' || b == ']' || b == '}') {
                        closers.set(id);
                        break;
                    }
                }
            }
            if (!closers.isEmpty()) {
                return ValidByConstructionTest.drawAllowed(closers, random, v.size());
            }
        }
        return ValidByConstructionTest.drawAllowed(allowed, random, v.size());
    }
}
