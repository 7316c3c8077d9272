package io.github.djlllmzoo.integration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * The MKL preload of both launchers, {@code bin/llmzoo} and {@code bin/llmzoo-spark}: each builds
 * {@code libllmzoo-mkl-cpu.so} and starts its JVM with it in {@code LD_PRELOAD} under {@code
 * LLMZOO_MKL_CPU_FIX=on}, leaves it out under {@code off}, and refuses any other value. The
 * launchers run from a copy of the project whose class-path stamps are up to date (so nothing is
 * built with Maven) with a {@code java} on the PATH that reports the environment it was started
 * with. Whether the library then gives the right answers is {@code cli}'s {@code MklCpuFixTest}.
 */
class LauncherMklPreloadTest {

    private static final Path HOME = Path.of(System.getProperty("llmzoo.home")).toAbsolutePath().normalize();
    private static final String LIBRARY = "libllmzoo-mkl-cpu.so";

    @TempDir
    Path copy;

    private Path fakeJavaDir;

    @BeforeEach
    void copyTheLaunchersWithUpToDateStamps() throws IOException {
        assumeTrue("Linux".equals(System.getProperty("os.name")) && "amd64".equals(System.getProperty("os.arch")),
                "the preload applies to x86-64 Linux only");
        assumeTrue(onPath("cc"), "no C compiler (cc) on the PATH");
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
        Files.writeString(java, "#!/bin/sh\necho \"LD_PRELOAD=$LD_PRELOAD\"\n");
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"llmzoo", "llmzoo-spark"})
    void onBuildsTheLibraryAndPreloadsItIntoTheJvm(String launcher) throws Exception {
        Result r = launch(launcher, "on");
        Path library = copy.resolve("cli/target/native/" + LIBRARY);
        assertEquals(0, r.code, r.err);
        assertEquals("LD_PRELOAD=" + library, r.out.strip());
        assertTrue(Files.isRegularFile(library), library.toString());
    }

    @ParameterizedTest
    @ValueSource(strings = {"llmzoo", "llmzoo-spark"})
    void offLeavesMklAlone(String launcher) throws Exception {
        Result r = launch(launcher, "off");
        assertEquals(0, r.code, r.err);
        assertEquals("LD_PRELOAD=", r.out.strip());
    }

    @ParameterizedTest
    @ValueSource(strings = {"llmzoo", "llmzoo-spark"})
    void anotherValueIsRefusedNamingIt(String launcher) throws Exception {
        Result r = launch(launcher, "sometimes");
        assertEquals(2, r.code, r.out);
        assertEquals("error: LLMZOO_MKL_CPU_FIX must be auto, on or off, not 'sometimes'", r.err.strip());
        assertEquals("", r.out);
    }

    private record Result(int code, String out, String err) {}

    private Result launch(String launcher, String mode) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder("bash", copy.resolve("bin/" + launcher).toString(), "--help");
        pb.environment().remove("LD_PRELOAD");
        pb.environment().put("LLMZOO_MKL_CPU_FIX", mode);
        pb.environment().put("PATH", fakeJavaDir + File.pathSeparator + System.getenv("PATH"));
        Path err = copy.resolve("stderr-" + launcher + "-" + mode + ".log");
        pb.redirectError(err.toFile());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), launcher + " finished");
        return new Result(p.exitValue(), out, Files.readString(err));
    }

    private static boolean onPath(String program) {
        return Stream.of(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
                .anyMatch(dir -> !dir.isEmpty() && Files.isExecutable(Path.of(dir, program)));
    }
}
