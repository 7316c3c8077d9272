package io.github.djlllmzoo.blocks;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDArray;
import java.io.IOException;
import java.io.InputStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.URL;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * The affine product of {@link #MIN_ROWS} to {@link #MAX_ROWS} rows (a decode step of a batch) by a
 * native AVX-512 kernel ({@code blocks/src/main/native/few_row_product.c}) that reads each weight
 * element once for all rows, for a weight in either {@link Layout}. oneMKL, as PyTorch calls it,
 * reads the weight of an 8-row product at 14-17 GB/s a core against 31 GB/s for one row; this
 * kernel reads an (out, in) weight at 17-21 GB/s a core and an (in, out) one at about 28 GB/s
 * (docs/PERFORMANCE.md).
 *
 * <p>The build compiles the kernel where a C compiler is found and puts it beside this class; it is
 * used on Linux x86-64 CPUs with AVX-512F, for inference on float32 CPU arrays that PyTorch holds
 * contiguously, unless {@code -Dllmzoo.fewRowProduct=false}. Everything else, or a kernel that
 * cannot be loaded (logged once), takes the engine's product. The kernel records no gradients:
 * callers use it for inference only.
 */
final class FewRowProduct {

    /** How a weight is stored. */
    enum Layout {
        /** (out, in), as {@code torch.nn.Linear}: {@code x @ weight^T + bias}. */
        OUT_IN,
        /** (in, out), as Hugging Face's {@code Conv1D}: {@code x @ weight + bias}. */
        IN_OUT;

        long in(Shape weight) {
            return weight.get(this == OUT_IN ? 1 : 0);
        }

        long out(Shape weight) {
            return weight.get(this == OUT_IN ? 0 : 1);
        }
    }

    /** The most rows the kernel multiplies in one pass over the weight. */
    static final int MAX_ROWS = 8;

    /**
     * The fewest rows the kernel is used for; a single row goes to oneMKL's matrix-vector product,
     * which reads the weight at the machine's bandwidth already.
     */
    static final int MIN_ROWS = Integer.getInteger("llmzoo.fewRowProduct.minRows", 2);

    private static final String LIBRARY = "libllmzoo-few-row-product.so";
    private static final System.Logger LOGGER = System.getLogger(FewRowProduct.class.getName());

    /** PyTorch's {@code is_contiguous} of a tensor handle, or {@code null} where DJL hides it. */
    private static final MethodHandle IS_CONTIGUOUS = isContiguousHandle();

    private static final boolean AVAILABLE = IS_CONTIGUOUS != null && load();

    private FewRowProduct() {}

    /**
     * @return whether the kernel is loaded and may be used
     */
    static boolean available() {
        return AVAILABLE;
    }

    /**
     * Whether the kernel computes the product of {@code x} and {@code weight} plus {@code bias}:
     * inference is the caller's to check; here the arrays must be float32 on the CPU, held
     * contiguously, of matching sizes, and {@code x} must have {@link #MIN_ROWS} to {@link
     * #MAX_ROWS} rows.
     *
     * @param x input (..., in)
     * @param weight (out, in) or (in, out), as {@code layout} says
     * @param bias (out), or {@code null}
     * @param rows the rows of {@code x}
     * @param layout how {@code weight} is stored
     * @return whether {@link #multiply} may be called with these arrays
     */
    static boolean applies(NDArray x, NDArray weight, NDArray bias, long rows, Layout layout) {
        if (!AVAILABLE || rows < MIN_ROWS || rows > MAX_ROWS) {
            return false;
        }
        Shape w = weight.getShape();
        Shape in = x.getShape();
        return w.dimension() == 2
                && layout.in(w) == in.get(in.dimension() - 1)
                && w.size() <= Integer.MAX_VALUE
                && (bias == null || bias.getShape().dimension() == 1 && bias.getShape().get(0) == layout.out(w))
                && float32OnCpu(x)
                && float32OnCpu(weight)
                && (bias == null || float32OnCpu(bias))
                && contiguous(x)
                && contiguous(weight)
                && (bias == null || contiguous(bias));
    }

    /**
     * An uninitialized product for {@link #multiply} to fill: (rows, out) in {@code x}'s manager.
     *
     * @param x input (..., in)
     * @param weight the weight
     * @param rows the rows of {@code x}
     * @param layout how {@code weight} is stored
     * @return (rows, out)
     */
    static NDArray output(NDArray x, NDArray weight, long rows, Layout layout) {
        return x.getManager().create(new Shape(rows, layout.out(weight.getShape())), DataType.FLOAT32);
    }

    /**
     * Computes the columns {@code [from, to)} of the product {@code out} ({@code x @ weight^T +
     * bias} or {@code x @ weight + bias}, as {@code layout} says); other columns are left as they
     * are, so threads may fill disjoint columns of one output at once.
     *
     * @param x input (..., in) for which {@link #applies} holds
     * @param weight (out, in) or (in, out)
     * @param bias (out), or {@code null}
     * @param out (rows, out) from {@link #output}
     * @param from first column
     * @param to past the last column
     * @param layout how {@code weight} is stored
     */
    static void multiply(
            NDArray x, NDArray weight, NDArray bias, NDArray out, long from, long to, Layout layout) {
        Shape w = weight.getShape();
        ByteBuffer xs = buffer(x);
        ByteBuffer ws = buffer(weight);
        ByteBuffer bs = bias == null ? null : buffer(bias);
        ByteBuffer os = buffer(out);
        int rows = Math.toIntExact(out.getShape().get(0));
        int in = Math.toIntExact(layout.in(w));
        int outFeatures = Math.toIntExact(layout.out(w));
        int first = Math.toIntExact(from);
        int last = Math.toIntExact(to);
        if (layout == Layout.OUT_IN) {
            multiplyOutIn(xs, ws, bs, os, rows, in, outFeatures, first, last);
        } else {
            multiplyInOut(xs, ws, bs, os, rows, in, outFeatures, first, last);
        }
    }

    private static native void multiplyOutIn(
            ByteBuffer x, ByteBuffer weight, ByteBuffer bias, ByteBuffer out, int rows, int in, int outFeatures,
            int from, int to);

    private static native void multiplyInOut(
            ByteBuffer x, ByteBuffer weight, ByteBuffer bias, ByteBuffer out, int rows, int in, int outFeatures,
            int from, int to);

    /** A direct buffer over the array's memory (no copy). */
    private static ByteBuffer buffer(NDArray array) {
        return ((PtNDArray) array).toByteBuffer(true);
    }

    private static boolean float32OnCpu(NDArray array) {
        return array instanceof PtNDArray
                && array.getDataType() == DataType.FLOAT32
                && Device.Type.CPU.equals(array.getDevice().getDeviceType());
    }

    private static boolean contiguous(NDArray array) {
        try {
            return (boolean) IS_CONTIGUOUS.invokeExact((long) ((PtNDArray) array).getHandle());
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
            LOGGER.log(System.Logger.Level.INFO, "few-row product kernel off: DJL's is_contiguous not found", e);
            return null;
        } catch (LinkageError e) { // the engine's native library failed to load
            return null;
        }
    }

    private static boolean load() {
        if (!Boolean.parseBoolean(System.getProperty("llmzoo.fewRowProduct", "true"))) {
            return false;
        }
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "");
        if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64")) || !hasAvx512()) {
            return false;
        }
        URL resource = FewRowProduct.class.getResource("native/" + LIBRARY);
        if (resource == null) {
            LOGGER.log(System.Logger.Level.INFO, "few-row product kernel off: not built (no C compiler at build time)");
            return false;
        }
        try {
            Path file;
            if ("file".equals(resource.getProtocol())) {
                file = Paths.get(resource.toURI());
            } else {
                file = Files.createTempFile("llmzoo-few-row-product", ".so");
                file.toFile().deleteOnExit();
                try (InputStream in = resource.openStream()) {
                    Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
                }
            }
            System.load(file.toAbsolutePath().toString());
            return true;
        } catch (IOException | java.net.URISyntaxException | UnsatisfiedLinkError | SecurityException e) {
            LOGGER.log(System.Logger.Level.WARNING, "few-row product kernel off: could not load " + resource, e);
            return false;
        }
    }

    /** Whether the CPU has AVX-512F (the kernel's instructions), from {@code /proc/cpuinfo}. */
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
