package io.github.djlllmzoo.defaultmodel;

import java.util.Map;

/**
 * The word lists of {@link StoryCorpus}. Entries are plain ASCII, lower case unless they are names,
 * and may hold template placeholders ({@code {his}}, {@code {F}}...) that the story expands. Words
 * that start with a vowel letter must also start with a vowel sound (the generator turns "a" into
 * "an" before them), so "unicorn" or "one" are kept out.
 */
final class Lexicon {

    private Lexicon() {}

    /** How many plots {@link StoryCorpus} knows. */
    static final int PLOTS = 7;

    static final String[] BOYS = {
        "Tom", "Ben", "Max", "Sam", "Leo", "Jack", "Tim", "Finn", "Noah", "Liam", "Owen", "Luke",
        "Jake", "Ryan", "Adam", "Eli", "Oscar", "Theo", "Henry", "Oliver", "Lucas", "Felix", "Hugo",
        "Milo", "Toby", "Danny", "Peter", "Paul", "Nick", "Joe", "Bobby", "Billy", "Teddy", "Timmy",
        "Jimmy", "Freddie", "Harry", "George", "Arthur", "Alex", "Daniel", "Simon", "Kevin", "Ethan",
        "Jacob", "Mason", "Dylan", "Caleb", "Benny", "Oli"
    };

    static final String[] GIRLS = {
        "Lily", "Mia", "Emma", "Anna", "Sara", "Lucy", "Ella", "Amy", "Zoe", "Chloe", "Grace", "Ruby",
        "Rosie", "Daisy", "Molly", "Sophie", "Lola", "Ava", "Ivy", "Nora", "Clara", "Alice", "Maya",
        "Lena", "Julia", "Kate", "Jane", "Sue", "Jenny", "Katie", "Susie", "Bella", "Stella",
        "Hannah", "Olivia", "Emily", "Poppy", "Holly", "Hazel", "Elsie", "Millie", "Tilly", "Rose",
        "Lisa", "Nina", "Mary", "Beth", "Amelia", "Freya", "Penny"
    };

    /** Kinds of animal a character can be. */
    static final String[] ANIMALS = {
        "rabbit", "bunny", "fox", "bear", "mouse", "cat", "kitten", "dog", "puppy", "duck",
        "duckling", "owl", "frog", "squirrel", "hedgehog", "turtle", "pig", "piglet", "lamb", "cow",
        "horse", "pony", "goat", "chick", "hen", "bird", "robin", "sparrow", "penguin", "elephant",
        "lion", "tiger", "monkey", "giraffe", "zebra", "panda", "koala", "kangaroo", "deer", "wolf",
        "otter", "beaver", "raccoon", "badger", "mole", "snail", "ladybug", "butterfly", "bee", "ant",
        "caterpillar", "dragon", "dinosaur", "whale", "dolphin", "crab", "seal", "goose", "parrot",
        "hamster"
    };

    /** What the hero is like ("a curious little girl", "{H} was very curious"). */
    static final String[] TRAITS = {
        "happy", "curious", "kind", "brave", "shy", "clever", "funny", "gentle", "friendly",
        "playful", "busy", "cheerful", "silly", "sweet", "quiet", "careful", "smart", "polite",
        "jolly", "sleepy", "helpful", "bright", "bold", "caring", "proud", "lively", "good"
    };

    /** How the friend is introduced ("a shy little fox named Ben"). */
    static final String[] FRIEND_TRAITS = {
        "little", "small", "young", "tiny", "shy", "gentle", "sweet", "friendly", "kind", "sad",
        "quiet", "funny"
    };

    /** Family members; even indexes are female, odd ones male. */
    static final String[] PARENTS = {"mom", "dad", "grandma", "grandpa", "aunt", "uncle"};

    static final String[] VILLAGES = {
        "a small village", "a quiet town", "a big green forest", "a sunny valley",
        "a little town by the sea", "a faraway land", "a snowy land", "a busy city",
        "a land of tall hills", "a cozy little village", "a village by a river",
        "a land full of flowers", "a tiny town", "a kingdom by the sea", "a village on a hill"
    };

    static final String[] HOMES = {
        "a small house", "a little cottage", "a cozy cabin", "a tree house", "a yellow house",
        "a red house", "a tiny hut", "a warm burrow", "a big old barn", "a round nest", "a blue house",
        "a house with a green door", "a little white house", "a cozy den"
    };

    /** Places, used as "the {place}". */
    static final String[] PLACES = {
        "park", "forest", "garden", "beach", "farm", "meadow", "river", "pond", "lake", "hill",
        "woods", "field", "playground", "market", "school", "library", "mountain", "valley", "sea",
        "orchard", "bakery", "zoo", "town square", "old mill", "castle", "toy shop", "candy shop",
        "big oak tree"
    };

    /** Things a character loves to do, after "to". */
    static final String[] ACTIVITIES = {
        "play in the park", "read books", "sing songs", "draw pictures", "paint", "dance",
        "jump in puddles", "climb trees", "ride {his} bike", "build sand castles", "pick flowers",
        "chase butterflies", "look at the stars", "bake cookies with {his} {P}", "swim in the lake",
        "play hide and seek", "run in the grass", "splash in the water", "fly kites",
        "collect shells", "collect pretty leaves", "watch the clouds", "play the drum",
        "hum little songs", "help in the garden", "feed the ducks", "count the stars", "skip rope",
        "tell funny jokes", "make new friends", "explore the woods", "roll down the hill",
        "play tag", "blow bubbles", "listen to stories", "build with blocks", "plant seeds",
        "walk by the river", "visit the farm", "look for bugs", "make mud pies",
        "play with {his} friends", "paint pictures", "play outside", "swing on the swings"
    };

    static final String[] COLORS = {
        "red", "blue", "green", "yellow", "pink", "purple", "orange", "brown", "white", "black",
        "gold", "silver"
    };

    /** Treasured things that can get lost. */
    static final String[] OBJECTS = {
        "ball", "kite", "teddy bear", "doll", "toy car", "toy train", "toy boat", "hat", "scarf",
        "blanket", "book", "drum", "whistle", "yo-yo", "bucket", "balloon", "shell", "necklace",
        "ring", "bell", "flute", "backpack", "lunch box", "umbrella", "mitten", "ribbon", "crown",
        "wand", "key", "basket", "flag", "robot", "marble", "coin", "feather", "cup", "boot", "bow",
        "toy plane", "music box"
    };

    /** Time phrases that start a later part of a story. */
    static final String[] TIMES = {
        "One day", "One morning", "The next day", "One afternoon", "One evening", "One summer day",
        "One spring morning", "One cold winter day", "One windy afternoon", "Later that week",
        "One bright morning", "On a warm fall day", "After lunch", "One Saturday"
    };

    /** Time phrases for later parts of a story that started on a given day. */
    static final String[] LATER_TIMES = {
        "Later that day", "After lunch", "That afternoon", "A little later", "Soon"
    };

    /** Hiding places, used after a verb ("looked under the bed"). */
    static final String[] SPOTS = {
        "under the bed", "behind the door", "under the table", "behind the sofa", "in the toy box",
        "under a big leaf", "near the old tree", "in the tall grass", "under the bridge",
        "by the pond", "in the kitchen", "under a pile of leaves", "behind a big rock",
        "inside an old boot", "in the sandbox", "under the stairs", "on top of the shelf",
        "in the barn", "in a bush", "next to the fence", "under the swing", "in the garden",
        "behind the curtain", "under the pillow", "in the flower bed", "on the roof",
        "in the mailbox", "by the river", "in the closet", "under the bench", "behind the shed"
    };

    /** Things to be brave about: {to do, what the hero fears (said aloud), did it}. */
    static final String[][] CHALLENGES = {
        {"swim in the lake", "The water is so deep.", "jumped in and swam across the lake"},
        {"climb the tall oak tree", "The tree is so tall.", "climbed all the way to the top of the tree"},
        {"ride {his} new bike", "What if I fall?", "rode {his} bike all the way down the road"},
        {"go down the big slide", "The slide is so high.", "went down the big slide with a happy shout"},
        {"sing a song for the whole class", "What if everyone laughs at me?", "sang the song in a loud, clear voice"},
        {"walk into the dark cave", "It is so dark in there.", "walked into the cave, one small step at a time"},
        {"jump over the little stream", "What if I fall in the water?", "jumped over the stream and landed on the other side"},
        {"sleep without the light on", "The dark is so scary.", "slept all night without the light on"},
        {"cross the old wooden bridge", "The bridge is so shaky.", "walked across the bridge, one step at a time"},
        {"pet the big farm dog", "The dog is so big.", "reached out and petted the big dog, and the dog wagged its tail"},
        {"read a story out loud", "What if I say a word wrong?", "read the whole story out loud"},
        {"fly {his} kite on the windy hill", "The wind is so strong.", "flew {his} kite high up in the sky"},
        {"jump into the pool", "The pool is so deep.", "jumped into the pool with a big splash"},
        {"go to school for the first time", "I do not know anyone there.", "went to school and made three new friends"},
        {"ride the big horse at the farm", "The horse is so tall.", "rode the horse all around the farm"},
        {"try a new food", "It looks so strange.", "took a little bite, and it was yummy"}
    };

    /** Someone in trouble (the friend) and how the hero helps: {trouble, help}. */
    static final String[][] TROUBLES = {
        {"{F} was stuck in a thorny bush and could not get out.",
            "{H} gently pulled the branches apart, and {F} climbed out."},
        {"{F} had hurt {fhis} leg and could not walk home.",
            "{H} helped {fhim} walk home, one slow step at a time."},
        {"{F} was lost and could not find {fhis} way home.",
            "{H} knew the way, so {he} walked with {F} all the way to {fhis} home."},
        {"{fHis} kite was stuck high up in a tall tree.",
            "{H} climbed the tree carefully and brought the kite down."},
        {"{F} was too small to reach the apples on the tree.",
            "{H} picked the apples and shared them with {fhim}."},
        {"{F} was cold and hungry.", "{H} gave {fhim} {his} warm scarf and some bread to eat."},
        {"{fHis} ball had rolled into the pond.",
            "{H} found a long stick and pulled the ball out of the water."},
        {"{F} had dropped all of {fhis} berries on the ground.",
            "{H} helped {fhim} pick up every berry and put them back in {fhis} basket."},
        {"{F} was stuck in the mud.",
            "{H} held out a long branch, and {F} held on tight and climbed out."},
        {"{fHis} little boat was floating away down the river.",
            "{H} ran along the river and caught the boat just in time."},
        {"{F} was all alone and had no one to play with.",
            "{H} sat down next to {fhim} and asked, \"Do you want to play with me?\""},
        {"{F} had a broken wagon and could not carry {fhis} apples home.",
            "{H} helped {fhim} fix the wheel, and they pulled the wagon home together."}
    };

    /** Things to share: {thing, to use it, used it}. */
    static final String[][] TREATS = {
        {"a big chocolate cake", "eat", "ate"},
        {"a bag of cookies", "eat", "ate"},
        {"a basket of red apples", "eat", "ate"},
        {"a bowl of sweet berries", "eat", "ate"},
        {"a warm apple pie", "eat", "ate"},
        {"a jar of honey", "eat", "ate"},
        {"a plate of pancakes", "eat", "ate"},
        {"a big juicy peach", "eat", "ate"},
        {"a box of candy", "eat", "ate"},
        {"a bag of nuts", "eat", "ate"}
    };

    /** Toys to share: {thing, to use it, used it}. */
    static final String[][] TOYS = {
        {"a new red ball", "play with", "played with"},
        {"a shiny toy car", "play with", "played with"},
        {"a big box of crayons", "draw with", "drew with"},
        {"a new kite", "fly", "flew"},
        {"a wooden toy train", "play with", "played with"},
        {"a set of blocks", "build with", "built with"},
        {"a red wagon", "ride in", "rode in"},
        {"a new jump rope", "play with", "played with"},
        {"a little drum", "play", "played"},
        {"a bright yellow ball", "play with", "played with"}
    };

    /** Gifts to make: {the gift, to make it}. */
    static final String[][] GIFTS = {
        {"the card", "make a card with bright colors"},
        {"the cake", "bake a cake"},
        {"the picture", "paint a picture"},
        {"the flower crown", "make a crown of flowers"},
        {"the little boat", "build a little boat"},
        {"the bird house", "build a bird house"},
        {"the necklace", "make a necklace of shells"},
        {"the paper star", "fold a big paper star"},
        {"the song", "write a new song"},
        {"the clay pot", "make a pot out of clay"},
        {"the cookies", "bake some cookies"},
        {"the scarf", "knit a warm scarf"}
    };

    /** What the failed first try of a gift looks like. */
    static final String[] OOPS = {
        "it fell apart", "the paint spilled everywhere", "it did not look right",
        "the wind blew it away", "it broke in two", "it came out all wrong", "it got all wet",
        "the glue did not stick", "it was too small", "it fell on the floor"
    };

    /** Outdoor plans: {to do, did}. */
    static final String[][] OUTDOOR = {
        {"play in the park", "played in the park"},
        {"fly a kite", "flew a kite"},
        {"have a picnic", "had a picnic"},
        {"go to the beach", "went to the beach"},
        {"ride their bikes", "rode their bikes"},
        {"build a sand castle", "built a sand castle"},
        {"play ball", "played ball"},
        {"pick berries in the woods", "picked berries in the woods"},
        {"go fishing at the lake", "went fishing at the lake"},
        {"play tag in the field", "played tag in the field"},
        {"plant flowers in the garden", "planted flowers in the garden"},
        {"go on a long walk", "went on a long walk"}
    };

    /** Indoor fun: {to do, did}. */
    static final String[][] INDOOR = {
        {"build a fort with blankets", "built a fort with blankets"},
        {"bake cookies", "baked cookies"},
        {"play a board game", "played a board game"},
        {"draw pictures", "drew pictures"},
        {"read a story", "read a story"},
        {"play dress up", "played dress up"},
        {"put on a puppet show", "put on a puppet show"},
        {"sing songs", "sang songs"},
        {"make paper boats", "made paper boats"},
        {"play hide and seek", "played hide and seek"},
        {"do a puzzle", "did a puzzle"},
        {"have a tea party", "had a tea party"}
    };

    /** What spoils an outdoor plan. */
    static final String[][] STORMS = {
        {"dark clouds came and it started to rain"},
        {"the wind began to blow very hard"},
        {"it began to snow"},
        {"big drops of rain began to fall"},
        {"thunder rumbled across the sky"},
        {"a big storm came"}
    };

    /** Something curious to find: {the thing, how they follow it up}. */
    static final String[][] MYSTERIES = {
        {"an old map", "followed the map"},
        {"a trail of tiny footprints", "followed the footprints"},
        {"a little golden key", "looked for the door that the key could open"},
        {"a glowing stone", "followed the light of the stone"},
        {"a paper boat", "walked up the stream where the boat came from"},
        {"a trail of colorful flowers", "followed the flowers"},
        {"a small wooden box with a map inside", "followed the map"},
        {"a shiny blue feather", "looked for the bird that lost it"}
    };

    /** What a discovery turns out to be. */
    static final String[][] DISCOVERIES = {
        {"a secret garden full of flowers"},
        {"a little lake with golden fish"},
        {"a cave full of shiny stones"},
        {"an old tree house"},
        {"a field of bright yellow flowers"},
        {"a hidden waterfall"},
        {"a tiny village of mice"},
        {"a big tree full of ripe apples"},
        {"a quiet pond where baby ducks were swimming"},
        {"a rainbow over a green hill"},
        {"a meadow full of butterflies"},
        {"a box full of old toys"}
    };

    /** Unhappy feelings, fit for any setback. */
    static final String[] BAD = {"sad", "upset", "unhappy", "gloomy", "grumpy"};

    /** Fear, for a challenge. */
    static final String[] SCARED = {"scared", "nervous", "afraid", "frightened", "worried", "shy"};

    /** Feeling alone or in the wrong. */
    static final String[] LONELY = {"sad", "lonely", "bad", "sorry"};

    static final String[] GOOD = {
        "happy", "glad", "excited", "joyful", "cheerful", "thankful", "delighted",
        "pleased", "relieved", "hopeful", "grateful"
    };

    static final String[] WEATHER = {
        "sunny", "warm", "bright", "windy", "cool", "lovely", "beautiful", "quiet", "cold", "cloudy"
    };

    /** Lexicon categories that templates pick from afresh with {@code {@name}}. */
    static final Map<String, String[]> CATEGORIES =
            Map.of("bad", BAD, "scared", SCARED, "lonely", LONELY, "good", GOOD, "oops", OOPS, "color", COLORS, "weather", WEATHER);
}
