package io.github.djlllmzoo.zoo;

import ai.djl.ndarray.NDList;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import ai.djl.translate.NoopTranslator;
import ai.djl.util.Ec2Utils;
import java.lang.reflect.Field;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * Loads a checkpoint in a fresh JVM one of three ways and prints {@code OPT_OUT_TRACKING} and
 * whether DJL's engine went on to its telemetry check when it started, then {@code RUST_FLAVOR}: {@code EngineDefaultsProbe
 * (model-path|zoo|local-model) <checkpoint dir>}.
 */
public final class EngineDefaultsProbe {

    private EngineDefaultsProbe() {}

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[1]);
        switch (args[0]) {
            case "model-path":
                load(Criteria.builder().setTypes(NDList.class, NDList.class).optModelPath(dir).build());
                break;
            case "zoo":
                load(
                        Criteria.builder()
                                .setTypes(NDList.class, NDList.class)
                                .optGroupId(LlmModelZoo.GROUP_ID)
                                .optArtifactId(LlmModelZoo.ANY_MODEL)
                                .optArgument("model", dir.toString())
                                .optTranslator(new NoopTranslator())
                                .build());
                break;
            case "local-model":
                LocalModel.load(dir).close();
                break;
            default:
                throw new IllegalArgumentException(args[0]);
        }
        // Ec2Utils.callHome records the time of a check-in it went on with; it stays 0 when it
        // returned at once because tracking was opted out (no public API tells).
        Field lastCheckIn = Ec2Utils.class.getDeclaredField("lastCheckIn");
        lastCheckIn.setAccessible(true);
        System.out.println(
                System.getProperty(EngineDefaults.OPT_OUT_TRACKING) + " " + lastCheckIn.getLong(null) + " "
                        + System.getProperty(EngineDefaults.RUST_FLAVOR));
    }

    private static void load(Criteria<NDList, NDList> criteria) throws Exception {
        try (ZooModel<NDList, NDList> model = criteria.loadModel()) {
            model.getBlock();
        }
    }
}
