package io.github.djlllmzoo.defaultmodel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.defaultmodel.StoryCorpus.CastMember;
import io.github.djlllmzoo.defaultmodel.StoryCorpus.Gender;
import io.github.djlllmzoo.defaultmodel.StoryCorpus.Story;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StoryCorpusTest {

    private static final Pattern WORD = Pattern.compile("[A-Za-z]+(?:['-][A-Za-z]+)*");
    private static final Pattern MALE_PRONOUN = Pattern.compile("\\b(?i:he|him|his|himself)\\b");
    private static final Pattern FEMALE_PRONOUN = Pattern.compile("\\b(?i:she|her|hers|herself)\\b");

    /** 1,000 stories with their casts, shared by the content checks. */
    private static List<Story> stories;

    @BeforeAll
    static void generate() {
        StoryCorpus corpus = new StoryCorpus(2024);
        stories = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            stories.add(corpus.nextStory());
        }
    }

    @Test
    void sameSeedGivesIdenticalText() {
        assertEquals(new StoryCorpus(7).generate(200), new StoryCorpus(7).generate(200));
    }

    @Test
    void differentSeedsGiveDifferentText() {
        assertNotEquals(new StoryCorpus(7).generate(20), new StoryCorpus(8).generate(20));
        assertNotEquals(new StoryCorpus(0).story(), new StoryCorpus(1).story());
    }

    @Test
    void successiveStoriesDifferAndShorterRunsArePrefixes() {
        StoryCorpus c = new StoryCorpus(3);
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < 300; i++) {
            assertTrue(seen.add(c.story()), "story " + i + " repeats an earlier one");
        }
        assertTrue(new StoryCorpus(3).generate(50).startsWith(new StoryCorpus(3).generate(10).strip()));
    }

    @Test
    void everyStoryStartsWithAnOpeningAndEndsWithTheClosingLine() {
        for (Story s : stories) {
            String text = s.text();
            assertTrue(
                    StoryCorpus.OPENINGS.stream().anyMatch(o -> text.startsWith(o + ",")),
                    () -> "bad opening: " + text);
            assertTrue(text.endsWith("\n" + StoryCorpus.CLOSING), () -> "bad closing: " + text);
            assertFalse(text.substring(0, text.length() - StoryCorpus.CLOSING.length()).contains("The end"));
        }
        long onceUponATime = stories.stream().filter(s -> s.text().startsWith("Once upon a time")).count();
        assertTrue(onceUponATime > 500, "\"Once upon a time\" should dominate but opened " + onceUponATime);
        for (String opening : StoryCorpus.OPENINGS) {
            assertTrue(stories.stream().anyMatch(s -> s.text().startsWith(opening)), opening + " never used");
        }
    }

    @Test
    void storiesAreSeparatedByBlankLinesAndSplitBackExactly() {
        String text = new StoryCorpus(11).generate(100);
        assertTrue(text.endsWith(StoryCorpus.CLOSING + "\n"));
        assertFalse(text.endsWith("\n\n"));
        List<String> split = StoryCorpus.splitStories(text);
        StoryCorpus again = new StoryCorpus(11);
        assertEquals(100, split.size());
        for (String s : split) {
            assertEquals(again.story(), s);
            assertFalse(s.contains("\n\n"), "a story must not hold a blank line");
        }
        assertEquals("", new StoryCorpus(11).generate(0));
    }

    @Test
    void textIsPlainAsciiWithoutTemplateLeftovers() {
        for (Story s : stories) {
            String t = s.text();
            for (int i = 0; i < t.length(); i++) {
                char c = t.charAt(i);
                assertTrue(c == '\n' || (c >= ' ' && c < 0x7F), () -> "non-ASCII or control char in " + t);
            }
            assertFalse(t.matches("(?s).*[{}\\[\\]|@~].*"), () -> "template syntax left in " + t);
            assertFalse(t.contains("  "), () -> "double space in " + t);
            assertFalse(Pattern.compile("\\b[Aa] [aeiouAEIOU]").matcher(t).find(), () -> "'a' before a vowel: " + t);
            assertFalse(Pattern.compile("\\b[Aa]n [b-df-hj-np-tv-zB-DF-HJ-NP-TV-Z]").matcher(t).find(), () -> "'an' before a consonant: " + t);
            for (String sentence : t.split("(?<=[.!?])\\s+")) {
                char first = sentence.charAt(sentence.charAt(0) == '"' ? 1 : 0);
                assertFalse(Character.isLowerCase(first), () -> "sentence starts lower case: " + sentence);
            }
        }
    }

    @Test
    void pronounsMatchTheGenderOfTheCast() {
        int checked = 0;
        for (Story s : stories) {
            Set<Gender> genders = new HashSet<>();
            for (CastMember c : s.cast()) {
                genders.add(c.gender());
            }
            if (genders.size() != 1) {
                continue;
            }
            Pattern wrong = genders.contains(Gender.MALE) ? FEMALE_PRONOUN : MALE_PRONOUN;
            Matcher m = wrong.matcher(s.text());
            assertFalse(m.find(), () -> "cast " + s.cast() + " but '" + m.group() + "' in:\n" + s.text());
            checked++;
        }
        assertTrue(checked > 200, "too few single-gender casts to check: " + checked);
    }

    @Test
    void reflexivePronounsAgreeWithTheirSubject() {
        Pattern reflexive = Pattern.compile("(\\w+) (?:said to|felt so proud of) (himself|herself)");
        int checked = 0;
        for (Story s : stories) {
            Matcher m = reflexive.matcher(s.text());
            while (m.find()) {
                String subject = m.group(1);
                boolean male = m.group(2).equals("himself");
                Gender expected;
                if (subject.equalsIgnoreCase("he")) {
                    expected = Gender.MALE;
                } else if (subject.equalsIgnoreCase("she")) {
                    expected = Gender.FEMALE;
                } else {
                    expected = s.cast().stream().filter(c -> c.name().equals(subject)).findFirst()
                            .orElseThrow(() -> new AssertionError(subject + " is not in the cast of " + s.text()))
                            .gender();
                }
                assertEquals(expected == Gender.MALE, male, () -> "'" + m.group() + "' in:\n" + s.text());
                checked++;
            }
            Matcher bad = Pattern.compile("\\b(?:(?:[Hh]e|[Ss]he|[Ii]t) were|[Tt]hey was|[Ww]e was|I is)\\b").matcher(s.text());
            assertFalse(bad.find(), () -> "agreement error in:\n" + s.text());
        }
        assertTrue(checked > 50, "too few reflexives to check: " + checked);
    }

    @Test
    void namedCharactersRecurWithinAStory() {
        Set<String> allNames = new HashSet<>(List.of(Lexicon.BOYS));
        allNames.addAll(List.of(Lexicon.GIRLS));
        for (Story s : stories) {
            Set<String> castNames = new HashSet<>();
            for (CastMember c : s.cast()) {
                castNames.add(c.name());
                if (!c.role().equals("parent")) {
                    int min = c.role().equals("hero") ? 3 : 2;
                    assertTrue(
                            count(s.text(), c.name()) >= min,
                            () -> c + " should appear at least " + min + " times in:\n" + s.text());
                }
            }
            assertEquals("hero", s.cast().get(0).role());
            // No name from the lexicon appears unless it belongs to the cast.
            Matcher m = WORD.matcher(s.text());
            while (m.find()) {
                String w = m.group();
                assertTrue(!allNames.contains(w) || castNames.contains(w), () -> w + " is not in the cast of:\n" + s.text());
            }
        }
    }

    @Test
    void everyPlotIsUsed() {
        Set<String> plots = new TreeSet<>();
        for (Story s : stories) {
            plots.add(s.plot());
        }
        assertEquals(Lexicon.PLOTS, plots.size(), plots.toString());
    }

    @Test
    void vocabularyIsSmallButVaried() {
        Set<String> words = new HashSet<>();
        long tokens = 0;
        for (Story s : stories) {
            Matcher m = WORD.matcher(s.text());
            while (m.find()) {
                words.add(m.group().toLowerCase(Locale.ROOT));
                tokens++;
            }
        }
        // About 850 distinct words over 1,000 stories of ~130 words each.
        assertTrue(words.size() >= 500, "too few distinct words: " + words.size());
        assertTrue(words.size() <= 1500, "too many distinct words: " + words.size());
        double wordsPerStory = tokens / (double) stories.size();
        assertTrue(wordsPerStory > 80 && wordsPerStory < 250, "words per story " + wordsPerStory);
        // And many more distinct stories than templates: no two of 1000 share their second line.
        Set<String> secondLines = new HashSet<>();
        for (Story s : stories) {
            secondLines.add(s.text().split("\n")[1]);
        }
        assertTrue(secondLines.size() > 990, "second lines repeat: " + secondLines.size());
    }

    @Test
    void writeCreatesTheFileAtomicallyWithTheGeneratedText(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("sub/stories.txt");
        new StoryCorpus(5).write(file, 30);
        String written = Files.readString(file, StandardCharsets.US_ASCII);
        assertEquals(new StoryCorpus(5).generate(30), written);

        // Replacing an existing file leaves no temporary file behind.
        new StoryCorpus(6).write(file, 3);
        assertEquals(new StoryCorpus(6).generate(3), Files.readString(file));
        try (Stream<Path> files = Files.list(file.getParent())) {
            assertEquals(List.of(file), files.toList());
        }
    }

    @Test
    void negativeCountsAreRejected(@TempDir Path dir) {
        assertThrows(IllegalArgumentException.class, () -> new StoryCorpus(1).generate(-1));
        assertThrows(IllegalArgumentException.class, () -> new StoryCorpus(1).write(dir.resolve("x"), -1));
    }

    private static int count(String text, String word) {
        Matcher m = Pattern.compile("\\b" + Pattern.quote(word) + "\\b").matcher(text);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }
}
