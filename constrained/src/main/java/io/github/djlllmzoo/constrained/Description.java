package io.github.djlllmzoo.constrained;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Describes a record or one of its components in the JSON Schema {@link RecordSchema} derives (the
 * schema's {@code description}): guidance for the model when the schema is shown to it, ignored by
 * the constraint itself.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.RECORD_COMPONENT, ElementType.TYPE})
public @interface Description {

    /** @return the description */
    String value();
}
