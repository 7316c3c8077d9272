package io.github.djlllmzoo.translators;

import io.github.djlllmzoo.blocks.LoraAdapter;
import java.util.List;

/**
 * A decode step's LoRA adapter per row ({@link LoraAdapter#selectRows}; {@code null} for the model's
 * own weights), kept open on the thread that drives the steps while the rows' adapters stay the same,
 * so that what a selection derives from the adapters' weights is not made again every step.
 */
final class RowAdapters implements AutoCloseable {

    private LoraAdapter.Selection selection;
    private List<String> names = List.of();

    /**
     * Selects the rows' adapters for the next decode pass, keeping the current selection where they
     * are the same.
     *
     * @param rowNames each row's adapter, in row order ({@code null} for none); kept, not copied
     */
    void select(List<String> rowNames) {
        if (selection != null && rowNames.equals(names)) {
            return;
        }
        close();
        selection = LoraAdapter.selectRows(rowNames);
        names = rowNames;
    }

    /** Releases the selection: nothing of the adapters' is kept while no row decodes. */
    @Override
    public void close() {
        if (selection != null) {
            selection.close();
            selection = null;
            names = List.of();
        }
    }
}
