package io.github.djlllmzoo.cli;

import io.github.djlllmzoo.zoo.KnownModel;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code llmzoo models}: the registry. */
@Command(name = "models", mixinStandardHelpOptions = true, description = "List the models of the registry.")
final class ModelsCommand implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        out.printf("%-16s %-38s %-6s %-6s %s%n", "NAME", "HUGGING FACE ID", "FAMILY", "SIZE", "NOTE");
        for (KnownModel model : KnownModel.ALL) {
            out.printf(
                    "%-16s %-38s %-6s %-6s %s%n",
                    model.name(), model.hubId(), model.family(), model.parameters(), model.note());
        }
        out.println();
        out.println("--model also takes any Hugging Face id (org/name) or a checkpoint directory.");
        out.flush();
        return 0;
    }
}
