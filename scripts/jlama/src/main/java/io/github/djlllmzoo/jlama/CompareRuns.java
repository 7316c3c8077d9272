package io.github.djlllmzoo.jlama;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Prints the side-by-side table of scripts/bench-jlama.sh from the JSON lines both engines wrote:
 * prefill and decode tokens/s, whether each Jlama run generated exactly llmzoo's ids, and the
 * speed ratios against the Jlama runs whose ids are correct.
 *
 * <p>Usage: {@code CompareRuns LABEL=llmzoo.json LABEL=jlama.json ...}; the first is llmzoo's.
 */
public final class CompareRuns {

    private record Run(String label, JsonNode json) {
        double prefill() {
            return json.get("prefill_tokens_per_s").asDouble();
        }

        double decode() {
            return json.get("decode_tokens_per_s").asDouble();
        }

        List<Long> ids() {
            List<Long> ids = new ArrayList<>();
            json.get("output_ids").forEach(n -> ids.add(n.asLong()));
            return ids;
        }
    }

    private CompareRuns() {}

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        List<Run> runs = new ArrayList<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            runs.add(new Run(arg.substring(0, eq), mapper.readTree(new File(arg.substring(eq + 1)))));
        }
        Run ours = runs.get(0);
        List<Long> reference = ours.ids();
        JsonNode effective = ours.json().get("effective_gb_per_s");
        JsonNode stream = ours.json().get("stream_gb_per_s");
        JsonNode fraction = ours.json().get("bandwidth_fraction");
        if (effective != null && stream != null && fraction != null && effective.isNumber() && stream.isNumber()
                && fraction.isNumber()) {
            System.out.printf(Locale.ROOT, "llmzoo decode reads weights at %.2f GB/s; streaming read (%s): %.2f GB/s; %.0f%%%s%n",
                    effective.asDouble(), ours.json().get("stream_method").asText(), stream.asDouble(),
                    100 * fraction.asDouble(),
                    ours.json().has("bandwidth_fraction_runs") ? " (median of the runs' own ratios)" : "");
        }
        System.out.printf(Locale.ROOT, "%-40s %14s %13s  %s%n", "engine", "prefill tok/s", "decode tok/s", "generated ids");
        System.out.printf(Locale.ROOT, "%-40s %14.1f %13.2f  %s%n", ours.label(), ours.prefill(), ours.decode(), "(reference)");
        Run bestDecode = null;
        Run bestPrefill = null;
        for (Run run : runs.subList(1, runs.size())) {
            int diverge = firstDifference(reference, run.ids());
            String verdict = diverge < 0 ? "identical" : "WRONG: differ from token " + diverge;
            System.out.printf(Locale.ROOT, "%-40s %14.1f %13.2f  %s%n", run.label(), run.prefill(), run.decode(), verdict);
            if (diverge < 0) {
                if (bestDecode == null || run.decode() > bestDecode.decode()) {
                    bestDecode = run;
                }
                if (bestPrefill == null || run.prefill() > bestPrefill.prefill()) {
                    bestPrefill = run;
                }
            }
        }
        if (bestDecode == null) {
            System.out.println("no Jlama run generated llmzoo's ids: no ratio is meaningful");
            return;
        }
        System.out.printf(Locale.ROOT, "decode  llmzoo / jlama = %.2f  (against the fastest correct Jlama run: %s)%n",
                ours.decode() / bestDecode.decode(), bestDecode.label());
        System.out.printf(Locale.ROOT, "prefill llmzoo / jlama = %.2f  (against the fastest correct Jlama run: %s)%n",
                ours.prefill() / bestPrefill.prefill(), bestPrefill.label());
    }

    private static int firstDifference(List<Long> a, List<Long> b) {
        int n = Math.min(a.size(), b.size());
        for (int i = 0; i < n; i++) {
            if (!a.get(i).equals(b.get(i))) {
                return i;
            }
        }
        return a.size() == b.size() ? -1 : n;
    }
}
