package io.github.djlllmzoo.integration;

import java.util.List;
import java.util.Random;

/**
 * Seeded generators of English text from two unrelated domains, for checking that fine-tuning
 * adapts a model to a domain it has not seen: everyday stories and cooking recipes.
 */
final class DomainText {

    private DomainText() {}

    /** Paragraphs of short everyday stories. */
    static String stories(int paragraphs, long seed) {
        Random r = new Random(seed);
        List<String> names = List.of("Tom", "Anna", "Lily", "Ben", "Sam", "Mia", "Jack", "Emma");
        List<String> places = List.of("the park", "the beach", "school", "the garden", "the forest", "the river");
        List<String> animals = List.of("dog", "cat", "bird", "rabbit", "horse", "duck");
        List<String> things = List.of("a red ball", "a blue kite", "a big box", "a little boat", "a yellow hat", "an old book");
        List<String> feelings = List.of("happy", "sad", "tired", "excited", "scared", "proud");
        List<String> weather = List.of("sunny", "cold", "windy", "rainy", "warm");
        StringBuilder text = new StringBuilder();
        for (int p = 0; p < paragraphs; p++) {
            String name = pick(r, names);
            String friend = pick(r, names);
            String animal = pick(r, animals);
            text.append("One ").append(pick(r, weather)).append(" day, ").append(name).append(" went to ")
                    .append(pick(r, places)).append(" with a ").append(animal).append(". ");
            text.append("The ").append(animal).append(" found ").append(pick(r, things)).append(" and ran to ")
                    .append(friend).append(". ");
            text.append(name).append(" was ").append(pick(r, feelings)).append(" and said, \"Look at the ")
                    .append(animal).append("!\" ");
            text.append("Then they played together until the sun went down, and everyone went home ")
                    .append(pick(r, feelings)).append(".\n\n");
        }
        return text.toString();
    }

    /** Paragraphs of cooking recipes. */
    static String recipes(int paragraphs, long seed) {
        Random r = new Random(seed);
        List<String> dishes = List.of("banana bread", "apple pie", "chocolate cake", "lemon muffins", "carrot cake", "oat cookies");
        List<String> dry = List.of("flour", "sugar", "brown sugar", "cocoa powder", "rolled oats", "baking soda");
        List<String> wet = List.of("melted butter", "milk", "vegetable oil", "yogurt", "honey", "buttermilk");
        List<String> bowls = List.of("a large bowl", "a mixing bowl", "a medium bowl", "the stand mixer");
        List<String> verbs = List.of("Whisk", "Stir", "Beat", "Fold", "Mix");
        List<String> amounts = List.of("1 cup", "2 cups", "half a cup", "3 tablespoons", "1 teaspoon", "a pinch");
        StringBuilder text = new StringBuilder();
        for (int p = 0; p < paragraphs; p++) {
            text.append("To make ").append(pick(r, dishes)).append(", preheat the oven to ")
                    .append(325 + 25 * r.nextInt(3)).append(" degrees and grease a ")
                    .append(8 + r.nextInt(3)).append(" inch pan. ");
            text.append("In ").append(pick(r, bowls)).append(", ").append(pick(r, verbs).toLowerCase(java.util.Locale.ROOT))
                    .append(' ').append(pick(r, amounts)).append(" of ").append(pick(r, dry)).append(" with ")
                    .append(pick(r, amounts)).append(" of ").append(pick(r, wet)).append(". ");
            text.append(pick(r, verbs)).append(" in ").append(2 + r.nextInt(3)).append(" eggs and ")
                    .append(pick(r, amounts)).append(" of ").append(pick(r, dry)).append(" until smooth. ");
            text.append("Bake for ").append(20 + 5 * r.nextInt(6))
                    .append(" minutes, until a toothpick comes out clean, then let it cool on a rack.\n\n");
        }
        return text.toString();
    }

    private static String pick(Random r, List<String> options) {
        return options.get(r.nextInt(options.size()));
    }
}
