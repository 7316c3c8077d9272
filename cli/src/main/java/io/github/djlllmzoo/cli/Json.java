package io.github.djlllmzoo.cli;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;

/** The JSON writer of the command line: one compact object per line, nulls kept. */
final class Json {

    static final Gson GSON = new GsonBuilder().serializeNulls().disableHtmlEscaping().create();

    private Json() {}
}
