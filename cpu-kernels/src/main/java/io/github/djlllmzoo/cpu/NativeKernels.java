package io.github.djlllmzoo.cpu;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.pytorch.engine.PtNDArray;
import java.io.IOException;
import java.io.InputStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The library of the AVX-512 kernels ({@code cpu-kernels/src/main/native}: {@link FewRowProduct}
 * and {@link DecodeAttention}), and what they need to read PyTorch's arrays in place.
 *
 * <p>The build compiles the library where a C compiler is found and puts it beside this class. It
 * is loaded on Linux x86-64 CPUs with AVX-512F; elsewhere, or where it was not built or cannot be
 * loaded, the kernels are off and {@link CpuKernels} use the engine's operations in their place.
 * Not built is an ordinary configuration (logged at info); built but not loadable is a fault (a
 * warning).
 */
final class NativeKernels {

    /** Where the build puts the library, beside this class. */
    static final String RESOURCE = "native/libllmzoo-kernels.so";

    private static final Logger LOG = LoggerFactory.getLogger(NativeKernels.class);

    /** PyTorch's {@code is_contiguous} of a tensor handle, or {@code null} where DJL hides it. */
    private static final MethodHandle IS_CONTIGUOUS = isContiguousHandle();

    private static final boolean LOADED = IS_CONTIGUOUS != null && load(NativeKernels.class.getResource(RESOURCE));

    private NativeKernels() {}

    /** @return whether the kernels' library is loaded */
    static boolean loaded() {
        return LOADED;
    }

    /**
     * Whether a kernel is on: the library is loaded and the kernel's switch is not {@code false}.
     *
     * @param property the kernel's switch, e.g. {@code llmzoo.decodeAttention}
     * @return whether the kernel may be used
     */
    static boolean enabled(String property) {
        return LOADED && Boolean.parseBoolean(System.getProperty(property, "true"));
    }

    /**
     * Whether a kernel may read the array in place: float32 in PyTorch on the CPU, its elements
     * dense in row-major order.
     *
     * @param array the array
     * @return whether its memory is the float32 elements in order
     */
    static boolean denseFloat32OnCpu(NDArray array) {
        return array instanceof PtNDArray
                && array.getDataType() == DataType.FLOAT32
                && Device.Type.CPU.equals(array.getDevice().getDeviceType())
                && contiguous((PtNDArray) array);
    }

    /**
     * A direct buffer over an array's memory (no copy), for an array {@link #denseFloat32OnCpu}
     * accepts.
     *
     * @param array the array
     * @return its memory
     */
    static ByteBuffer buffer(NDArray array) {
        return ((PtNDArray) array).toByteBuffer(true);
    }

    private static boolean contiguous(PtNDArray array) {
        try {
            return (boolean) IS_CONTIGUOUS.invokeExact((long) array.getHandle());
        } catch (Throwable t) { // not expected: the handle is checked to bind at start
            return false;
        }
    }

    /**
     * DJL's PyTorch binding has {@code is_contiguous} but does not make it public; without it
     * nothing would tell a view (a transposed or strided array) from a dense one.
     */
    private static MethodHandle isContiguousHandle() {
        try {
            Class<?> library = Class.forName("ai.djl.pytorch.jni.PyTorchLibrary");
            Field instance = library.getDeclaredField("LIB");
            instance.setAccessible(true);
            Method method = library.getDeclaredMethod("torchIsContiguous", long.class);
            method.setAccessible(true);
            return MethodHandles.lookup().unreflect(method).bindTo(instance.get(null));
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.info("native kernels off: DJL's is_contiguous not found", e);
            return null;
        } catch (LinkageError e) { // the engine's native library failed to load
            return null;
        }
    }

    /**
     * Loads the library where the CPU can run it.
     *
     * @param resource the library in the class path, or {@code null} where it was not built
     * @return whether it is loaded
     */
    static boolean load(URL resource) {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "");
        if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64")) || !hasAvx512()) {
            return false;
        }
        if (resource == null) {
            LOG.info("native kernels off: not built (no C compiler at build time)");
            return false;
        }
        try {
            Path file;
            if ("file".equals(resource.getProtocol())) {
                file = Paths.get(resource.toURI());
            } else {
                file = Files.createTempFile("llmzoo-kernels", ".so");
                file.toFile().deleteOnExit();
                try (InputStream in = resource.openStream()) {
                    Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
                }
            }
            System.load(file.toAbsolutePath().toString());
            return true;
        } catch (IOException | URISyntaxException | UnsatisfiedLinkError | SecurityException e) {
            LOG.warn("native kernels off: could not load {}", resource, e);
            return false;
        }
    }

    /** Whether the CPU has AVX-512F (the kernels' instructions), from {@code /proc/cpuinfo}. */
    private static boolean hasAvx512() {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/cpuinfo"))) {
                if (line.startsWith("flags")) {
                    return (" " + line.substring(line.indexOf(':') + 1) + " ").contains(" avx512f ");
                }
            }
        } catch (IOException | RuntimeException e) {
            return false;
        }
        return false;
    }
}
