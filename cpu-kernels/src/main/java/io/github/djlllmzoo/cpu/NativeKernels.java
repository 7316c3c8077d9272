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
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The library of the native kernels ({@code cpu-kernels/src/main/native}: {@link FewRowProduct},
 * {@link DecodeAttention} and the others), one per instruction set ({@link CpuIsa}), and what they
 * need to read PyTorch's arrays in place.
 *
 * <p>The build compiles each variant it can (docs/cpu-kernels.md) into {@code
 * native/<os>-<arch>/libllmzoo-kernels-<isa>.so} beside this class. One is loaded, once: the one
 * {@code -Dllmzoo.cpu.isa} forces (refused with {@link UnsupportedCpuIsaException} where the CPU or
 * the build cannot run it), else the best the CPU reports and the build made; where none is, the
 * kernels are off and {@link CpuKernels} use the engine's operations in their place. Not built is an
 * ordinary configuration (logged at info); built but not loadable is a fault (a warning).
 */
final class NativeKernels {

    /** Where the build puts the libraries, beside this class: {@code native/<os>-<arch>/}. */
    static final String RESOURCE_DIRECTORY = "native/";

    private static final Logger LOG = LoggerFactory.getLogger(NativeKernels.class);

    /** PyTorch's {@code is_contiguous} of a tensor handle, or {@code null} where DJL hides it. */
    private static final MethodHandle IS_CONTIGUOUS = isContiguousHandle();

    /** The variant loaded, or why the one asked for was refused. */
    private static final Selection SELECTION = select(System.getProperty(CpuIsa.PROPERTY),
            System.getProperty("os.name", ""), System.getProperty("os.arch", ""), CpuIsa.cpuFeatures());

    private NativeKernels() {}

    /**
     * The variant that runs, or the refusal of the one forced.
     *
     * @param isa the variant loaded ({@link CpuIsa#NONE}: none)
     * @param refused why the forced variant cannot run, or {@code null}
     */
    record Selection(CpuIsa isa, UnsupportedCpuIsaException refused) {}

    /** @return whether a kernels' library is loaded */
    static boolean loaded() {
        return SELECTION.isa() != CpuIsa.NONE;
    }

    /**
     * @return the variant loaded ({@link CpuIsa#NONE}: none)
     * @throws UnsupportedCpuIsaException where {@code -Dllmzoo.cpu.isa} forced one that cannot run
     */
    static CpuIsa isa() {
        if (SELECTION.refused() != null) {
            throw SELECTION.refused();
        }
        return SELECTION.isa();
    }

    /**
     * Whether a kernel is on: a library is loaded and {@code -Dllmzoo.cpu.off} does not list it.
     *
     * @param name the kernel's name in {@link KernelSwitches#NAMES}, e.g. {@code decodeAttention}
     * @return whether the kernel may be used
     */
    static boolean enabled(String name) {
        return loaded() && KernelSwitches.on(name);
    }

    /**
     * The library resource of a variant for a CPU with these features: ARM64's with {@code sdot}
     * where the CPU reports the dot-product extension ({@code asimddp}).
     *
     * @param isa the variant, not {@link CpuIsa#NONE}
     * @param features the CPU's feature flags
     * @return the resource path, relative to this class
     */
    static String resource(CpuIsa isa, Set<String> features) {
        String variant = isa == CpuIsa.NEON && features.contains("asimddp") ? "neon-dotprod" : isa.id();
        return RESOURCE_DIRECTORY + isa.platform() + "/libllmzoo-kernels-" + variant + ".so";
    }

    /**
     * Chooses and loads a variant.
     *
     * @param forced {@code -Dllmzoo.cpu.isa}'s value, or {@code null}
     * @param os {@code os.name}
     * @param arch {@code os.arch}
     * @param features the CPU's feature flags
     * @return the variant loaded, or the refusal of the one forced
     */
    static Selection select(String forced, String os, String arch, Set<String> features) {
        List<CpuIsa> runnable = CpuIsa.runnable(os, arch, features);
        if (forced != null && !forced.isBlank()) {
            CpuIsa isa;
            try {
                isa = CpuIsa.named(forced);
            } catch (UnsupportedCpuIsaException e) {
                return new Selection(CpuIsa.NONE, e);
            }
            if (isa == CpuIsa.NONE) {
                LOG.info("native kernels off: -D{}=none", CpuIsa.PROPERTY);
                return new Selection(CpuIsa.NONE, null);
            }
            String refusal = !runnable.contains(isa)
                    ? "this CPU (" + os + " " + arch + ") does not report " + isa.id()
                    : IS_CONTIGUOUS == null ? "DJL's is_contiguous, which the kernels need, was not found"
                    : NativeKernels.class.getResource(resource(isa, features)) == null
                    ? "this build has no " + resource(isa, features) + " (no compiler for it at build time)"
                    : !load(NativeKernels.class.getResource(resource(isa, features)))
                    ? "its library could not be loaded (the warning above says why)"
                    : null;
            if (refusal != null) {
                return new Selection(CpuIsa.NONE, new UnsupportedCpuIsaException(
                        "-D" + CpuIsa.PROPERTY + "=" + isa.id() + " cannot run: " + refusal));
            }
            LOG.info("native kernels: {} (forced by -D{})", resource(isa, features), CpuIsa.PROPERTY);
            return new Selection(isa, null);
        }
        if (IS_CONTIGUOUS == null) {
            return new Selection(CpuIsa.NONE, null);
        }
        for (CpuIsa isa : runnable) {
            if (isa == CpuIsa.NONE) {
                break;
            }
            if (load(NativeKernels.class.getResource(resource(isa, features)))) {
                LOG.info("native kernels: {}", resource(isa, features));
                return new Selection(isa, null);
            }
        }
        return new Selection(CpuIsa.NONE, null);
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
     * Whether an attention kernel reads a KV cache buffer where it lies: dense on the CPU, in
     * float32 or float16 (a {@code --kv-cache-dtype float16} cache, widened as it is read).
     *
     * @param array a cache's key or value buffer
     * @return whether it is such a buffer
     */
    static boolean denseCacheOnCpu(NDArray array) {
        DataType type = array.getDataType();
        return array instanceof PtNDArray
                && (type == DataType.FLOAT32 || type == DataType.FLOAT16)
                && Device.Type.CPU.equals(array.getDevice().getDeviceType())
                && contiguous((PtNDArray) array);
    }

    /**
     * A direct buffer over an array's memory (no copy), for an array {@link #denseFloat32OnCpu}
     * or {@link #denseCacheOnCpu} accepts.
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
     * Loads a library.
     *
     * @param resource the library in the class path, or {@code null} where it was not built
     * @return whether it is loaded
     */
    static boolean load(URL resource) {
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
}
