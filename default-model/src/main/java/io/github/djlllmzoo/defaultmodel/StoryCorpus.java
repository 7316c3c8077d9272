package io.github.djlllmzoo.defaultmodel;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A deterministic generator of short, simple children's stories, used as the training corpus of
 * the project's small default model.
 *
 * <p>Stories come from a grammar: a cast (a hero, often a friend and a parent, each a child or an
 * animal with a name and a consistent gender), a few per-story choices (a home, a treasured object,
 * a favourite activity...) and one of several plots (a lost object, a fear to overcome, someone to
 * help, sharing, making a gift, a rainy day, a discovery), each told with a problem, an attempt and a
 * resolution. Every sentence slot has several templates, and the lexicon has a few hundred entries,
 * so the text is varied while its vocabulary stays small (around a thousand distinct words), which a
 * model of a few MB learns quickly.
 *
 * <p>Format: plain ASCII. A story is two to four lines (paragraphs separated by one {@code '\n'});
 * its first line starts with one of {@link #OPENINGS} and its last line is {@link #CLOSING}. Stories
 * are separated by a blank line, and {@link #generate(int)} and {@link #write(Path, int)} end the text
 * with a single {@code '\n'}; {@link #splitStories(String)} reads that back.
 *
 * <p>Determinism: the {@code i}-th story of an instance depends only on the seed and {@code i}
 * (it is generated from its own {@link Random} seeded with a mix of both), so the same seed always
 * gives the same text and {@code generate(100)} is a prefix of {@code generate(1000)} for fresh
 * instances. Instances are not thread-safe.
 */
public final class StoryCorpus {

    /** How stories start. "Once upon a time" is by far the most frequent. */
    public static final List<String> OPENINGS =
            List.of("Once upon a time", "One day", "Long ago", "One sunny morning");

    /** The last line of every story. */
    public static final String CLOSING = "The end.";

    /** The separator between two stories: a blank line. */
    public static final String STORY_SEPARATOR = "\n\n";

    private static final Pattern BLANK_LINE = Pattern.compile("\\n[ \\t]*\\n\\s*");
    private static final Pattern A_BEFORE_VOWEL = Pattern.compile("\\b([Aa]) (?=[aeiouAEIOU])");

    private final long seed;
    private long index;

    /**
     * Creates a generator.
     *
     * @param seed the seed; the same seed gives the same stories in the same order
     */
    public StoryCorpus(long seed) {
        this.seed = seed;
    }

    /**
     * Returns the next story (without a trailing newline or separator).
     *
     * @return a story whose first line starts with one of {@link #OPENINGS} and whose last line is
     *     {@link #CLOSING}
     */
    public String story() {
        return nextStory().text();
    }

    /**
     * Returns the next {@code numStories} stories as one text: stories separated by a blank line,
     * ending with one {@code '\n'}.
     *
     * @param numStories how many stories, at least 0
     * @return the text ({@code ""} when {@code numStories} is 0)
     */
    public String generate(int numStories) {
        if (numStories < 0) {
            throw new IllegalArgumentException("numStories must be >= 0 but was " + numStories);
        }
        StringBuilder sb = new StringBuilder(numStories * 800);
        for (int i = 0; i < numStories; i++) {
            if (i > 0) {
                sb.append(STORY_SEPARATOR);
            }
            sb.append(story());
        }
        if (numStories > 0) {
            sb.append('\n');
        }
        return sb.toString();
    }

    /**
     * Writes the next {@code numStories} stories to {@code file}, in the format of {@link
     * #generate(int)}. The text goes to a temporary file in the same directory which then replaces
     * {@code file} atomically (where the file system allows), so readers never see half a corpus.
     * Parent directories are created.
     *
     * @param file the corpus file to create or replace
     * @param numStories how many stories, at least 0
     * @throws IOException if the file cannot be written
     */
    public void write(Path file, int numStories) throws IOException {
        if (numStories < 0) {
            throw new IllegalArgumentException("numStories must be >= 0 but was " + numStories);
        }
        Path target = file.toAbsolutePath();
        Files.createDirectories(target.getParent());
        Path tmp = AtomicFiles.tempSibling(target);
        try {
            try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.US_ASCII)) {
                for (int i = 0; i < numStories; i++) {
                    if (i > 0) {
                        w.write(STORY_SEPARATOR);
                    }
                    w.write(story());
                }
                if (numStories > 0) {
                    w.write('\n');
                }
            }
            AtomicFiles.move(tmp, target);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /**
     * Splits a corpus text (as written by {@link #generate(int)} or {@link #write(Path, int)}) back
     * into stories: on blank lines, without surrounding whitespace, skipping empty pieces.
     *
     * @param corpus the corpus text
     * @return the stories, in order
     */
    public static List<String> splitStories(String corpus) {
        List<String> out = new ArrayList<>();
        for (String s : BLANK_LINE.split(corpus)) {
            String t = s.strip();
            if (!t.isEmpty()) {
                out.add(t);
            }
        }
        return out;
    }

    // ------------------------------------------------------------------------------------------
    // Generation
    // ------------------------------------------------------------------------------------------

    /** Grammatical gender of a character, deciding its pronouns. */
    enum Gender {
        MALE("he", "He", "him", "his", "His", "himself"),
        FEMALE("she", "She", "her", "her", "Her", "herself");

        final String he;
        final String capHe;
        final String him;
        final String his;
        final String capHis;
        final String himself;

        Gender(String he, String capHe, String him, String his, String capHis, String himself) {
            this.he = he;
            this.capHe = capHe;
            this.him = him;
            this.his = his;
            this.capHis = capHis;
            this.himself = himself;
        }
    }

    /** A character of a story: the name a template uses and the gender of its pronouns. */
    record CastMember(String role, String name, Gender gender) {}

    /** A generated story with the characters its text mentions (for tests). */
    record Story(String text, List<CastMember> cast, String plot) {}

    /** Generates the next story together with its cast. */
    Story nextStory() {
        long storySeed = mix(seed, index++);
        return new Builder(new Random(storySeed)).build();
    }

    private static long mix(long seed, long index) {
        long z = seed * 0x9E3779B97F4A7C15L + (index + 1) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** One story under construction: the random source, the cast and the fixed choices. */
    private static final class Builder {
        private final Random rnd;
        private final Map<String, String> ctx = new HashMap<>();
        /** Which character each pronoun or name key belongs to, to record who a story mentions. */
        private final Map<String, Role> roleOfKey = new HashMap<>();
        private final Set<Role> used = EnumSet.noneOf(Role.class);
        private final Map<Role, CastMember> cast = new HashMap<>();
        private final List<String> paragraphs = new ArrayList<>();
        private boolean homeSaid;
        private StringBuilder paragraph = new StringBuilder();

        private enum Role {
            HERO,
            FRIEND,
            PARENT
        }

        Builder(Random rnd) {
            this.rnd = rnd;
        }

        Story build() {
            castCharacters();
            chooseSetting();
            int plot = rnd.nextInt(Lexicon.PLOTS);
            String plotName;
            switch (plot) {
                case 0 -> {
                    plotName = "lost";
                    lostObject();
                }
                case 1 -> {
                    plotName = "brave";
                    bravery();
                }
                case 2 -> {
                    plotName = "help";
                    helping();
                }
                case 3 -> {
                    plotName = "share";
                    sharing();
                }
                case 4 -> {
                    plotName = "gift";
                    makingGift();
                }
                case 5 -> {
                    plotName = "weather";
                    badWeather();
                }
                default -> {
                    plotName = "discovery";
                    discovery();
                }
            }
            newParagraph();
            paragraphs.add(CLOSING);
            List<CastMember> usedCast = new ArrayList<>();
            for (Role r : Role.values()) {
                if (used.contains(r)) {
                    usedCast.add(cast.get(r));
                }
            }
            return new Story(
                    String.join("\n", paragraphs), Collections.unmodifiableList(usedCast), plotName);
        }

        // ---------------------------------------------------------------- cast and setting

        private void castCharacters() {
            Gender heroGender = rnd.nextBoolean() ? Gender.MALE : Gender.FEMALE;
            String heroName = name(heroGender, null);
            boolean heroHuman = rnd.nextInt(100) < 45;
            String heroKind = heroHuman ? human(heroGender) : pick(Lexicon.ANIMALS);
            defineCharacter(Role.HERO, "", heroName, heroGender);
            ctx.put("kind", heroKind);
            String trait = pick(Lexicon.TRAITS);
            String intro;
            if (heroHuman) {
                intro = "a " + trait + " little " + heroKind + " named {H}";
            } else {
                intro = "a " + (rnd.nextBoolean() ? "little " : trait + " ") + heroKind + " named {H}";
            }
            ctx.put("intro", intro);
            ctx.put("trait", trait);

            Gender friendGender = rnd.nextBoolean() ? Gender.MALE : Gender.FEMALE;
            String friendName = name(friendGender, heroName);
            boolean friendHuman = heroHuman ? rnd.nextBoolean() : rnd.nextInt(100) < 15;
            String friendKind = friendHuman ? human(friendGender) : pick(Lexicon.ANIMALS);
            defineCharacter(Role.FRIEND, "f", friendName, friendGender);
            ctx.put("fkind", friendKind);
            // How the narration introduces the friend the first time.
            ctx.put("Fa", "a " + pick(Lexicon.FRIEND_TRAITS) + " " + friendKind + " named {F}");
            ctx.put("Fd", friendHuman ? "{his} friend {F}" : "{F} the {fkind}");

            int p = rnd.nextInt(Lexicon.PARENTS.length);
            Gender parentGender = p % 2 == 0 ? Gender.FEMALE : Gender.MALE;
            defineCharacter(Role.PARENT, "p", Lexicon.PARENTS[p], parentGender);
        }

        private String human(Gender g) {
            return g == Gender.MALE ? "boy" : "girl";
        }

        private String name(Gender g, String notThis) {
            String[] names = g == Gender.MALE ? Lexicon.BOYS : Lexicon.GIRLS;
            String n;
            do {
                n = pick(names);
            } while (n.equals(notThis));
            return n;
        }

        private void defineCharacter(Role role, String prefix, String name, Gender g) {
            CastMember c = new CastMember(role.name().toLowerCase(Locale.ROOT), name, g);
            cast.put(role, c);
            boolean hero = prefix.isEmpty();
            put(role, hero ? "H" : prefix.toUpperCase(Locale.ROOT), name);
            put(role, prefix + "he", g.he);
            put(role, prefix + "He", g.capHe);
            put(role, prefix + "him", g.him);
            put(role, prefix + "his", g.his);
            put(role, prefix + "His", g.capHis);
            put(role, prefix + "himself", g.himself);
        }

        private void put(Role role, String key, String value) {
            ctx.put(key, value);
            roleOfKey.put(key, role);
        }

        private void chooseSetting() {
            ctx.put("village", pick(Lexicon.VILLAGES));
            ctx.put("home", pick(Lexicon.HOMES));
            ctx.put("place", pick(Lexicon.PLACES));
            String place2;
            do {
                place2 = pick(Lexicon.PLACES);
            } while (place2.equals(ctx.get("place")));
            ctx.put("place2", place2);
            ctx.put("act", pick(Lexicon.ACTIVITIES));
            ctx.put("color", pick(Lexicon.COLORS));
            ctx.put("obj", pick(Lexicon.OBJECTS));
            ctx.put("time", pick(Lexicon.TIMES));
            ctx.put("weather", pick(Lexicon.WEATHER));
        }

        // ---------------------------------------------------------------- shared parts

        private void opening() {
            String opening = OPENINGS.get(weighted(60, 15, 15, 10));
            switch (opening) {
                case "Once upon a time" -> {
                    int t = rnd.nextInt(4);
                    homeSaid = t == 2;
                    say(new String[] {
                        "Once upon a time, there was {intro}.",
                        "Once upon a time, in {village}, there lived {intro}.",
                        "Once upon a time, there lived {intro} in {home} near the {place}.",
                        "Once upon a time, {intro} lived in {village}."
                    }[t]);
                }
                case "Long ago" -> {
                    int t = rnd.nextInt(3);
                    homeSaid = t == 2;
                    say(new String[] {
                        "Long ago, in {village}, there lived {intro}.",
                        "Long ago, there was {intro}.",
                        "Long ago, {intro} lived in {home} by the {place}."
                    }[t]);
                }
                case "One day" -> say(
                        "One day, {intro} woke up early.",
                        "One day, {intro} went out to play.",
                        "One day, {intro} was sitting by the window.");
                default -> say(
                        "One sunny morning, {intro} woke up with a smile.",
                        "One sunny morning, {intro} ran outside to play.");
            }
            if (!opening.equals("Once upon a time") && !opening.equals("Long ago")) {
                // The story already started on a given day: later parts happen the same day.
                ctx.put("time", pick(Lexicon.LATER_TIMES));
            }
        }

        private void setup(boolean withObject) {
            opening();
            maybe(homeSaid ? 0 : 60,
                    "{He} lived in {home} near the {place}.",
                    "{H} lived with {his} {P} in {home}.",
                    "{His} home was {home} not far from the {place}.");
            maybe(20, "It was a {weather} day.");
            say(
                    "{H} loved to {act}.",
                    "{He} liked to {act} more than anything.",
                    "Every day, {H} would {act}.",
                    "{H} was very {trait}, and {he} loved to {act}.");
            if (withObject) {
                say(
                        "{H} had a {color} {obj} that {he} loved very much.",
                        "{His} favorite thing in the whole world was {his} {color} {obj}.",
                        "{H} had a special {color} {obj}. It was a gift from {his} {P}.",
                        "{H} always took {his} {color} {obj} with {him} wherever {he} went.");
            }
        }

        private void friendArrives() {
            say(
                    "Just then, {Fd} came by.",
                    "Soon, {Fd} came to see {him}.",
                    "Then {Fd} walked over.",
                    "After a while, {Fd} came along.");
        }

        private void ending(String... lessons) {
            newParagraph();
            say(lessons);
            if (used.contains(Role.FRIEND)) {
                maybe(70,
                        "From that day on, {H} and {F} were the best of friends.",
                        "That night, {H} went to sleep with a big smile on {his} face.",
                        "{H} and {F} played together every day after that.",
                        "And {H} was happy for a long, long time.",
                        "They lived happily ever after.");
            } else {
                maybe(70,
                        "That night, {H} went to sleep with a big smile on {his} face.",
                        "{H} hugged {his} {P}, and {phe} hugged {him} back.",
                        "And {H} was happy for a long, long time.",
                        "{H} lived happily ever after.");
            }
        }

        private void feelBad() {
            say(
                    "{H} felt very {@bad}.",
                    "{He} was so {@bad} that {he} started to cry.",
                    "{He} sat down and felt {@bad}.",
                    "{H} was {@bad} and did not know what to do.");
        }

        private void feelGood() {
            say(
                    "{H} was so {@good}!",
                    "{H} felt very {@good}.",
                    "{He} jumped up and down because {he} was so {@good}.",
                    "{H} smiled a big smile. {He} felt {@good}.");
        }

        // ---------------------------------------------------------------- plots

        private void lostObject() {
            setup(true);
            newParagraph();
            say(
                    "{time}, {H} went to the {place2} to play with {his} {obj}. When {he} got home, the {obj} was gone!",
                    "{time}, {H} could not find {his} {color} {obj} anywhere.",
                    "{time}, {H} looked for {his} {obj}, but it was not there.",
                    "{time}, {H} wanted to play with {his} {obj}, but it was lost.");
            feelBad();
            maybe(60, "\"Where is my {obj}?\" {he} [asked|cried|said].");
            String spot1 = pick(Lexicon.SPOTS);
            String spot2 = pickOther(Lexicon.SPOTS, spot1);
            ctx.put("spot1", spot1);
            ctx.put("spot2", spot2);
            say(
                    "{He} looked {spot1}. {He} looked {spot2}. But the {obj} was not there.",
                    "{H} looked {spot1}, and then {he} looked {spot2}. Still no {obj}.");
            friendArrives();
            say(
                    "\"What is wrong, {H}?\" asked {F}.",
                    "\"Why are you sad, {H}?\" asked {F}.",
                    "{F} saw that {H} was sad. \"What happened?\" {fhe} asked.");
            say(
                    "\"I lost my {obj},\" said {H}.",
                    "\"I cannot find my {color} {obj},\" said {H}.");
            say(
                    "\"Do not worry. I will help you find it,\" said {F}.",
                    "\"Let us look together!\" said {F}.",
                    "\"I will help you,\" said {F}. \"Two friends can look better than one.\"");
            newParagraph();
            String spot3 = pickOther(Lexicon.SPOTS, spot1, spot2);
            ctx.put("spot3", spot3);
            say(
                    "They looked high and low. At last, {F} saw something {color} {spot3}. It was the {obj}!",
                    "{H} and {F} looked everywhere. Then {H} saw something {color} {spot3}. It was {his} {obj}!",
                    "They looked {spot3}, and there it was! The {color} {obj} was safe.");
            feelGood();
            say(
                    "{He} hugged {F} and said, \"Thank you, {F}! You are a good friend.\"",
                    "\"Thank you for helping me,\" said {H}. {F} smiled.",
                    "{H} gave {F} a big hug.");
            ending(
                    "From then on, {H} was very careful with {his} {obj}.",
                    "{H} learned that a good friend is always there to help.",
                    "After that, {H} and {F} played with the {obj} every day.",
                    "{H} learned to always put {his} {obj} away after playing.");
        }

        private void bravery() {
            setup(false);
            String[] ch = pickRow(Lexicon.CHALLENGES);
            ctx.put("try", ch[0]);
            ctx.put("why", ch[1]);
            // The same words inside a quote followed by "he said": "The tree is so tall," he said.
            ctx.put("whyq", ch[1].endsWith(".") ? ch[1].substring(0, ch[1].length() - 1) + "," : ch[1]);
            ctx.put("did", ch[2]);
            say(
                    "{H} wanted to {try}, but {he} was too scared.",
                    "{H} really wanted to {try}, but {he} was afraid.",
                    "More than anything, {H} wanted to {try}. But {he} was scared.");
            say(
                    "\"{whyq}\" {he} said to {himself}.",
                    "\"{whyq}\" {he} whispered.",
                    "{He} looked and thought, \"{why}\"");
            newParagraph();
            say(
                    "{time}, {H} went to try, but {he} felt {@scared} and stopped.",
                    "Every time {H} tried, {he} got {@scared} and ran back home.",
                    "{time}, {H} went to try, but {his} legs were shaking.");
            if (rnd.nextBoolean()) {
                friendArrives();
                say(
                        "\"You can do it, {H}!\" said {F}. \"I will be right here with you.\"",
                        "{F} said, \"Just take one small step at a time.\"",
                        "\"I was scared too, the first time,\" said {F}. \"But I tried, and it was fun!\"");
            } else {
                say(
                        "{His} {P} held {his} hand and said, \"Be brave, {H}. I believe in you.\"",
                        "{His} {P} smiled and said, \"Being brave means trying, even when you are scared.\"");
            }
            say(
                    "{H} took a deep breath.",
                    "{H} counted to three.",
                    "{H} closed {his} eyes and took a deep breath.");
            newParagraph();
            say(
                    "Then {he} {did}! {He} did it!",
                    "Slowly, {he} {did}.",
                    "And then, {H} {did}!");
            say(
                    "{H} felt so proud of {himself}.",
                    "{H} was so proud!",
                    "{He} jumped up and down because {he} was so {@good}.");
            say(
                    "\"I did it!\" {he} shouted.",
                    "\"That was not so scary after all,\" {he} said.",
                    "\"Let us do it again!\" {he} said with a laugh.");
            ending(
                    "{H} learned that being brave means trying even when you are scared.",
                    "From that day on, {H} was not afraid to {try}.",
                    "{H} learned that {he} could do hard things.");
        }

        private void helping() {
            setup(false);
            newParagraph();
            String[] t = pickRow(Lexicon.TROUBLES);
            ctx.put("trouble", t[0]);
            ctx.put("help", t[1]);
            say(
                    "{time}, {H} heard someone crying near the {place2}.",
                    "{time}, {H} was walking to the {place2} when {he} heard a small voice.",
                    "{time}, {H} went to the {place2} and saw someone who looked sad.");
            say(
                    "It was {Fa}.",
                    "There {he} found {Fa}.");
            say("{trouble}");
            say(
                    "\"Please help me,\" said {F}.",
                    "\"Can you help me?\" {F} asked.",
                    "\"Oh no, what can I do?\" cried {F}.");
            newParagraph();
            say(
                    "\"Do not worry, I will help you,\" said {H}.",
                    "{H} wanted to help.",
                    "{H} knew just what to do.");
            say("{help}");
            say(
                    "{F} was very {@good}. \"Thank you, {H}!\" {fhe} said.",
                    "\"You are so kind,\" said {F}. {fHe} gave {H} a big hug.",
                    "{F} smiled. \"Thank you for helping me,\" {fhe} said.");
            say(
                    "{H} smiled. Helping others made {him} feel {@good}.",
                    "{H} felt warm and {@good} inside.");
            ending(
                    "{H} learned that being kind is the best thing of all.",
                    "From that day on, {F} and {H} played together every day.",
                    "{H} learned that it feels good to help others.");
        }

        private void sharing() {
            setup(false);
            String[] thing = rnd.nextBoolean() ? pickRow(Lexicon.TREATS) : pickRow(Lexicon.TOYS);
            ctx.put("thing", thing[0]);
            ctx.put("use", thing[1]);
            ctx.put("used", thing[2]);
            newParagraph();
            say(
                    "{time}, {H} had {thing}.",
                    "{time}, {his} {P} gave {him} {thing}.",
                    "{time}, {H} found {thing} on the table.");
            friendArrives();
            say(
                    "{F} wanted to {use} it too.",
                    "\"Can I {use} it too?\" asked {F}.");
            say(
                    "But {H} did not want to share. \"No, it is mine,\" {he} said.",
                    "But {H} said, \"No! It is all mine.\"");
            say(
                    "{F} felt {@bad} and walked away.",
                    "{F} looked down and went home.");
            newParagraph();
            say(
                    "{H} was alone with {thing}, but it was not fun at all.",
                    "{H} sat alone. It was no fun without a friend.");
            say(
                    "{He} felt {@lonely} too.",
                    "{H} began to feel {@lonely}.");
            say(
                    "So {he} ran after {F} and said, \"I am sorry. Do you want to {use} it with me?\"",
                    "{He} went to find {F}. \"I am sorry,\" {he} said. \"Let us {use} it together.\"");
            say(
                    "{F} smiled, and they {used} it together.",
                    "{F} was {@good}, and the two friends {used} it together.");
            say(
                    "It was so much more fun with two!",
                    "They laughed and had the best day.");
            ending(
                    "{H} learned that sharing makes everyone happy.",
                    "{H} learned that sharing is more fun than keeping things to yourself.",
                    "From that day on, {H} always shared with {his} friends.");
        }

        private void makingGift() {
            setup(false);
            String[] g = pickRow(Lexicon.GIFTS);
            ctx.put("gift", g[0]);
            ctx.put("make", g[1]);
            boolean forParent = rnd.nextBoolean();
            if (forParent) {
                ctx.put("R", "{his} {P}");
                ctx.put("rhe", "{phe}");
                ctx.put("rHe", "{pHe}");
                ctx.put("rhim", "{phim}");
            } else {
                ctx.put("R", "{his} friend {F}");
                ctx.put("rhe", "{fhe}");
                ctx.put("rHe", "{fHe}");
                ctx.put("rhim", "{fhim}");
            }
            newParagraph();
            say(
                    "{time}, {H} wanted to make a gift for {R}.",
                    "{time}, {H} had an idea. {He} wanted to surprise {R}.");
            say(
                    "{He} decided to {make}.",
                    "{He} would {make}!");
            say(
                    "But the first time {he} tried, {@oops}.",
                    "{He} tried hard, but {@oops}.");
            feelBad();
            maybe(70,
                    "Then {he} remembered what {his} {P} always said: \"Never give up.\"",
                    "\"I will try again,\" {he} said.",
                    "{H} did not give up.");
            newParagraph();
            say(
                    "{He} tried again, slowly and carefully.",
                    "This time, {he} worked slowly and took {his} time.");
            say(
                    "At last, {gift} was ready, and it was beautiful.",
                    "This time, {gift} was just right.");
            say(
                    "{H} gave it to {R}. {rHe} was so {@good}!",
                    "When {R} saw the gift, {rhe} smiled a big smile.");
            say(
                    "\"Thank you, {H}! I love it,\" {rhe} said.",
                    "\"This is the best gift ever,\" {rhe} said, and gave {H} a hug.");
            ending(
                    "{H} learned that if you keep trying, you can do it.",
                    "{H} learned that the best gifts are made with love.",
                    "{H} was proud that {he} did not give up.");
        }

        private void badWeather() {
            setup(false);
            String[] out = pickRow(Lexicon.OUTDOOR);
            String[] in = pickRow(Lexicon.INDOOR);
            String[] w = pickRow(Lexicon.STORMS);
            ctx.put("out", out[0]);
            ctx.put("outDone", out[1]);
            ctx.put("in", in[0]);
            ctx.put("inDone", in[1]);
            ctx.put("storm", w[0]);
            newParagraph();
            say(
                    "{time}, {H} and {Fd} wanted to {out}.",
                    "{time}, {H} made a plan with {his} friend {F}. They wanted to {out}.");
            say(
                    "But then {storm}.",
                    "But just as they got ready, {storm}.");
            say(
                    "{H} felt {@bad}. \"Now we cannot {out},\" {he} said.",
                    "\"Oh no,\" said {H}. \"Now we cannot {out}.\"");
            newParagraph();
            say(
                    "{F} had an idea. \"Let us {in} instead!\" {fhe} said.",
                    "Then {F} said, \"I know! We can {in}!\"");
            say(
                    "So they {inDone}. They laughed and laughed.",
                    "So they {inDone}, and it was so much fun.");
            say(
                    "Later, the sun came out, and they went outside to {out} too.",
                    "When the sky was clear again, they ran outside and {outDone}.");
            ending(
                    "{H} learned that a rainy day can be a happy day too.",
                    "{H} learned that a good friend can make any day fun.",
                    "{H} learned that when plans change, you can still have fun.");
        }

        private void discovery() {
            setup(false);
            String[] m = pickRow(Lexicon.MYSTERIES);
            String[] d = pickRow(Lexicon.DISCOVERIES);
            ctx.put("thing", m[0]);
            ctx.put("follow", m[1]);
            ctx.put("found", d[0]);
            ctx.put("spot1", pick(Lexicon.SPOTS));
            newParagraph();
            say(
                    "{time}, {H} found {thing} {spot1}.",
                    "{time}, {H} saw {thing} {spot1}.");
            say(
                    "{He} wondered what it could be.",
                    "\"What is this?\" {he} said.",
                    "{H} was very curious.");
            say(
                    "{H} showed it to {Fd}. \"Let us find out!\" said {F}.",
                    "{He} ran to show {Fd}. \"We should follow it!\" said {F}.");
            newParagraph();
            say(
                    "So they {follow}. They walked past the {place} and over the hill.",
                    "Together, they {follow}. They walked for a long time.");
            say(
                    "At last, they found {found}.",
                    "Then they saw something amazing: {found}.");
            say(
                    "It was the most beautiful place they had ever seen.",
                    "{H} and {F} could not believe their eyes.");
            say(
                    "They played there until the sun went down.",
                    "They stayed and played all afternoon.");
            say(
                    "Then they went home and told {his} {P} all about it.",
                    "When they got home, {H} told {his} {P} about the adventure.");
            ending(
                    "{H} knew that the world was full of wonderful surprises.",
                    "{H} learned that it is fun to explore with a friend.",
                    "It was the best adventure {H} ever had.");
        }

        // ---------------------------------------------------------------- text assembly

        /** Expands one of the templates and appends it to the current paragraph. */
        private void say(String... templates) {
            String s = expand(templates[rnd.nextInt(templates.length)]);
            s = A_BEFORE_VOWEL.matcher(s).replaceAll("$1n ");
            s = capitalize(s);
            if (paragraph.length() > 0) {
                paragraph.append(' ');
            }
            paragraph.append(s);
        }

        /** Says one of the templates with probability {@code percent}%. */
        private void maybe(int percent, String... templates) {
            if (rnd.nextInt(100) < percent) {
                say(templates);
            }
        }

        private void newParagraph() {
            if (paragraph.length() > 0) {
                paragraphs.add(paragraph.toString());
                paragraph = new StringBuilder();
            }
        }

        private static String capitalize(String s) {
            int i = s.charAt(0) == '"' ? 1 : 0;
            if (i < s.length() && Character.isLowerCase(s.charAt(i))) {
                return s.substring(0, i) + Character.toUpperCase(s.charAt(i)) + s.substring(i + 1);
            }
            return s;
        }

        /**
         * Expands a template: {@code [a|b|c]} picks one alternative, {@code {key}} is a per-story
         * value (a name, a pronoun, a chosen object...) and {@code {@category}} a fresh pick from
         * the lexicon. Values are expanded again, so they may hold placeholders themselves.
         */
        private String expand(String t) {
            StringBuilder out = new StringBuilder(t.length() + 32);
            int i = 0;
            while (i < t.length()) {
                char c = t.charAt(i);
                if (c == '[') {
                    int end = matching(t, i, '[', ']');
                    List<String> alts = splitTopLevel(t.substring(i + 1, end));
                    out.append(expand(alts.get(rnd.nextInt(alts.size()))));
                    i = end + 1;
                } else if (c == '{') {
                    int end = t.indexOf('}', i);
                    String key = t.substring(i + 1, end);
                    out.append(expand(resolve(key)));
                    i = end + 1;
                } else {
                    out.append(c);
                    i++;
                }
            }
            return out.toString();
        }

        private String resolve(String key) {
            if (key.startsWith("@")) {
                String[] cat = Lexicon.CATEGORIES.get(key.substring(1));
                if (cat == null) {
                    throw new IllegalStateException("unknown lexicon category " + key);
                }
                return pick(cat);
            }
            String v = ctx.get(key);
            if (v == null) {
                throw new IllegalStateException("unknown template key {" + key + "}");
            }
            Role r = roleOfKey.get(key);
            if (r != null) {
                used.add(r);
            }
            return v;
        }

        private static int matching(String t, int open, char o, char c) {
            int depth = 0;
            for (int i = open; i < t.length(); i++) {
                if (t.charAt(i) == o) {
                    depth++;
                } else if (t.charAt(i) == c && --depth == 0) {
                    return i;
                }
            }
            throw new IllegalStateException("unbalanced " + o + " in template: " + t);
        }

        private static List<String> splitTopLevel(String s) {
            List<String> parts = new ArrayList<>();
            int depth = 0;
            int start = 0;
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c == '[' || c == '{') {
                    depth++;
                } else if (c == ']' || c == '}') {
                    depth--;
                } else if (c == '|' && depth == 0) {
                    parts.add(s.substring(start, i));
                    start = i + 1;
                }
            }
            parts.add(s.substring(start));
            return parts;
        }

        private String pick(String[] options) {
            return options[rnd.nextInt(options.length)];
        }

        private String[] pickRow(String[][] rows) {
            return rows[rnd.nextInt(rows.length)];
        }

        private String pickOther(String[] options, String... not) {
            while (true) {
                String s = pick(options);
                boolean clash = false;
                for (String n : not) {
                    clash |= s.equals(n);
                }
                if (!clash) {
                    return s;
                }
            }
        }

        private int weighted(int... weights) {
            int total = 0;
            for (int w : weights) {
                total += w;
            }
            int r = rnd.nextInt(total);
            for (int i = 0; i < weights.length; i++) {
                r -= weights[i];
                if (r < 0) {
                    return i;
                }
            }
            return weights.length - 1;
        }
    }
}
