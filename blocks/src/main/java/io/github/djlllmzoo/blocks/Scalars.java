package io.github.djlllmzoo.blocks;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Scalar operands (scales, coefficients) as 0-dim arrays made once per value, device and element
 * type, and kept for the life of the process. DJL's scalar arithmetic ({@code x.mul(0.5)}) creates
 * and frees a native array at every call, which costs several times the operation itself on one
 * token; {@code x.mul(Scalars.of(0.5, x))} does not.
 *
 * <p>A scalar that autograd keeps for a backward pass must come from here too: DJL's PyTorch
 * engine makes {@code x.mul(0.5)}'s operand over Java memory that only the operand's array keeps
 * alive, so once {@code mul} closes it, the next garbage collection frees memory the backward pass
 * still reads, and the gradients take whatever lands there.
 */
public final class Scalars {

    private record Home(String engine, Device device) {}

    private record Key(Home home, DataType dataType, double value) {}

    private static final ConcurrentMap<Key, NDArray> SCALARS = new ConcurrentHashMap<>();
    private static final ConcurrentMap<Home, NDManager> MANAGERS = new ConcurrentHashMap<>();

    private Scalars() {}

    /**
     * The scalar {@code value} on {@code like}'s device, in {@code like}'s element type.
     *
     * @param value the value
     * @param like the array the scalar will combine with
     * @return a 0-dim array; never close it
     */
    public static NDArray of(double value, NDArray like) {
        Home home = new Home(like.getManager().getEngine().getEngineName(), like.getDevice());
        return SCALARS.computeIfAbsent(new Key(home, like.getDataType(), value), Scalars::create);
    }

    /**
     * The manager that keeps arrays made once for the life of the process (scalars, other constants)
     * on a device of an engine.
     *
     * @param engine the engine's name
     * @param device the device
     * @return a base manager, never closed
     */
    static NDManager home(String engine, Device device) {
        return MANAGERS.computeIfAbsent(new Home(engine, device), h -> NDManager.newBaseManager(h.device(), h.engine()));
    }

    private static NDArray create(Key key) {
        NDManager manager = home(key.home().engine(), key.home().device());
        if (key.dataType() == DataType.FLOAT64) {
            return manager.create(key.value());
        }
        NDArray single = manager.create((float) key.value());
        if (key.dataType() == DataType.FLOAT32) {
            return single;
        }
        NDArray typed = single.toType(key.dataType(), false);
        single.close();
        return typed;
    }
}
