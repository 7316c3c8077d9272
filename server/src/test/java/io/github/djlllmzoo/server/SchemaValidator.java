package io.github.djlllmzoo.server;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import io.github.djlllmzoo.chat.PythonScript;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;


/**
 * Python's {@code jsonschema} (Draft 2020-12, formats checked), run as {@code python3
 * validate_json.py} (a test resource): a validator independent of the constrained decoding under
 * test. Where {@code python3} or its {@code jsonschema} module is absent, {@link
 * #unavailableReason()} says so and the tests that need it are skipped.
 */
final class SchemaValidator {

    private SchemaValidator() {}

    /** @return why the validator cannot run here, or null when it can */
    static String unavailableReason() {
        return PythonScript.unavailableReason("jsonschema");
    }

    /**
     * Validates every case in one Python process.
     *
     * @param cases each {@code {"schema": {...}, "text": "..."}}
     * @return per case null when valid, else the validator's messages
     */
    static List<String> validate(JsonArray cases)
            throws IOException, InterruptedException {
        List<String> results = new ArrayList<>();
        for (JsonElement e :
                PythonScript.run(SchemaValidator.class.getResource("/validate_json.py"), cases)) {
            results.add(e.isJsonNull() ? null : e.getAsString());
        }
        return results;
    }
}
