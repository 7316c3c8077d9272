package io.github.djlllmzoo.integration;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A copy of the project's launchers whose class-path stamps are up to date (so nothing is built
 * with Maven), run with a {@code java} on the PATH that prints what it was started with: the
 * launchers' own logic, without a JVM.
 */
final class LauncherCopy {

    private static final Path HOME = Path.of(System.getProperty("llmzoo.home")).toAbsolutePath().normalize();

    /** What a launcher printed and returned. */
    record Result(int code, String out, String err) {}

    private final Path copy;
    private final Path fakeJavaDir;

    /**
     * Copies the launchers into {@code copy} with a fake {@code java}.
     *
     * @param copy an empty directory
     * @param fakeJava the fake {@code java}'s shell script body, after {@code #!/bin/sh}
     */
    LauncherCopy(Path copy, String fakeJava) throws IOException {
        this.copy = copy;
        FileTime past = FileTime.from(Instant.now().minusSeconds(3600));
        for (String file : List.of("bin/llmzoo", "bin/llmzoo-spark", "bin/lib/launch.sh", "pom.xml",
                "cli/src/main/native/llmzoo_mkl_cpu.c")) {
            Path target = copy.resolve(file);
            Files.createDirectories(target.getParent());
            Files.copy(HOME.resolve(file), target);
            Files.setLastModifiedTime(target, past);
        }
        for (String stamp : List.of("cli/target/llmzoo.classpath", "spark/target/llmzoo-spark.classpath")) {
            Files.createDirectories(copy.resolve(stamp).getParent());
            Files.writeString(copy.resolve(stamp), copy.resolve("classes").toString());
        }
        fakeJavaDir = Files.createDirectory(copy.resolve("fake-java"));
        Path java = fakeJavaDir.resolve("java");
        Files.writeString(java, "#!/bin/sh\n" + fakeJava + "\n");
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    /** The copy's root. */
    Path root() {
        return copy;
    }

    /**
     * Runs {@code bin/LAUNCHER ARGS} from the copy.
     *
     * @param launcher {@code llmzoo} or {@code llmzoo-spark}
     * @param environment variables to set; a {@code null} value removes one
     * @param args the launcher's arguments
     */
    Result launch(String launcher, Map<String, String> environment, String... args)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("bash", copy.resolve("bin/" + launcher).toString()));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command);
        environment.forEach((name, value) -> {
            if (value == null) {
                pb.environment().remove(name);
            } else {
                pb.environment().put(name, value);
            }
        });
        pb.environment().put("PATH", fakeJavaDir + File.pathSeparator + System.getenv("PATH"));
        Path err = Files.createTempFile(copy, "stderr-" + launcher, ".log");
        pb.redirectError(err.toFile());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), launcher + " finished");
        return new Result(p.exitValue(), out, Files.readString(err));
    }

    /** Whether {@code program} is an executable on the PATH. */
    static boolean onPath(String program) {
        return Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
                .anyMatch(dir -> !dir.isEmpty() && Files.isExecutable(Path.of(dir, program)));
    }
}
