"""A fifth family of templated chat requests: tasks with a shape a visitor asks for by name.

The fourth family (everyday_requests.py) showed that short, concrete requests are what the shipped draft
finds hard: on its greedy answers it agrees about as little as on the gate's chat prompts, far less than on
the target's own self-instruct questions. This family adds more of that kind, in shapes none of the earlier
families has: numbered lists and suggestions, retellings of well-known stories, cooking steps, the meaning
of a word, rewriting a given sentence, small word problems with their numbers, phrases in another language,
short stories and "why" questions about ordinary things; a second group adds people, countries, how machines
work and short histories. Its topics are its own; the benchmark prompt files were read only to leave their
topics out (tests/test_draft_data.py checks that no benchmark prompt is close to a templated request).
"""
from __future__ import annotations

import random

# Things to do or plan, as lists of ideas, checklists and common mistakes.
ACTIVITIES = [
    "a first camping trip", "a long train journey", "a picnic in the park", "a school bake sale",
    "a neighbourhood street party", "a surprise birthday party", "a family reunion", "a road trip across Spain",
    "a weekend in Rome", "a beach holiday with teenagers", "a job fair", "a first day at a new school",
    "a first week at university", "learning to juggle", "learning a new language", "learning to swim as an adult",
    "starting a vegetable garden", "starting a podcast", "starting a blog", "starting a book club",
    "running a charity raffle", "organising a garage sale", "hosting a quiz night", "planning a small wedding",
    "decorating a tiny flat", "painting a bedroom", "building a birdhouse", "training a new puppy",
    "caring for a pet rabbit", "keeping houseplants alive in winter", "a snowy day indoors", "a power cut at home",
    "a long wait at the airport", "a team-building afternoon", "a retirement party", "a graduation speech",
    "a science club for ten-year-olds", "a chess club", "a charity fun run", "a museum visit with kids",
    "a visit to a zoo", "a night of stargazing", "a trip to the mountains", "a cycling holiday",
    "a photography walk", "a cooking class for beginners", "a language exchange meetup", "a volunteering day",
    "a study group before finals", "a presentation to investors",
]
ACTIVITY_REQUESTS = [
    "List five ideas for {a}.", "What should I keep in mind for {a}? Give me a numbered list.",
    "Give me a checklist for {a}.", "What are common mistakes people make with {a}?",
]
# Well-known stories, to retell and discuss.
STORIES = [
    "Hamlet", "Macbeth", "King Lear", "Othello", "The Tempest", "A Midsummer Night's Dream", "The Odyssey",
    "The Iliad", "Beowulf", "Cinderella", "Little Red Riding Hood", "Hansel and Gretel", "Snow White",
    "The Ugly Duckling", "The Three Little Pigs", "Goldilocks and the Three Bears", "Jack and the Beanstalk",
    "Peter Pan", "Pinocchio", "The Wizard of Oz", "Alice's Adventures in Wonderland", "The Little Prince",
    "Moby-Dick", "Pride and Prejudice", "Emma", "Frankenstein", "Dracula", "Jane Eyre", "Wuthering Heights",
    "Great Expectations", "Oliver Twist", "A Christmas Carol", "Treasure Island", "Robinson Crusoe",
    "Gulliver's Travels", "Don Quixote", "Les Misérables", "The Count of Monte Cristo", "The Three Musketeers",
    "Around the World in Eighty Days", "The Time Machine", "The War of the Worlds", "Animal Farm",
    "Nineteen Eighty-Four", "Brave New World", "The Great Gatsby", "Of Mice and Men", "The Old Man and the Sea",
    "Lord of the Flies", "Charlotte's Web", "The Secret Garden", "Heidi", "Black Beauty", "The Jungle Book",
    "The Call of the Wild", "Little Women", "The Adventures of Tom Sawyer", "Crime and Punishment",
    "Anna Karenina", "The Tortoise and the Hare",
]
STORY_REQUESTS = [
    "Tell me what happens in {s}, briefly.", "Who are the main characters in {s}?",
    "What is {s} about, and why is it still read today?", "What lesson does {s} teach?",
    "Write a short book report on {s} for a class of twelve-year-olds.",
]
DISHES = [
    "a vegetable soup", "a tomato pasta sauce", "scrambled eggs", "a French omelette", "guacamole", "hummus",
    "a fruit smoothie", "banana bread", "chocolate chip cookies", "a lemon cake", "fried rice", "a stir-fry",
    "a chickpea curry", "a lentil soup", "a Greek salad", "a potato salad", "roast chicken", "a mushroom risotto",
    "homemade pizza dough", "flatbread", "porridge", "overnight oats", "a cheese toastie", "garlic bread",
    "apple crumble", "rice pudding", "iced tea", "hot chocolate", "a vegetable lasagne", "fish tacos",
    "a bean chilli", "pumpkin soup", "coleslaw", "roasted vegetables", "a simple omelette for one",
    "a quick tomato salsa",
]
DISH_REQUESTS = [
    "How do I make {d}?", "Walk me through making {d} at home.", "What ingredients do I need for {d}?",
]
WORDS = [
    "ubiquitous", "ephemeral", "serendipity", "pragmatic", "resilient", "ambiguous", "meticulous", "candid",
    "benevolent", "frugal", "nostalgia", "procrastinate", "eloquent", "tenacious", "empathy", "irony",
    "paradox", "metaphor", "hypothesis", "photosphere", "biodiversity", "algorithm", "bandwidth", "latency",
    "inflation", "recession", "monopoly", "entrepreneur", "bureaucracy", "diplomacy", "sovereignty",
    "quarantine", "placebo", "antibiotic", "metabolism", "adrenaline", "ecosystem", "erosion", "tsunami",
    "equinox", "solstice", "gravity", "momentum", "entropy", "catalyst", "isotope", "symmetry", "ratio",
    "median", "variance", "hyperbole", "alliteration", "onomatopoeia", "idiom", "cliché", "euphemism",
    "sarcasm", "satire", "utopia", "dystopia", "renaissance", "folklore", "etiquette", "hygge", "wanderlust",
    "schadenfreude", "déjà vu", "faux pas", "carpe diem", "status quo",
]
WORD_REQUESTS = [
    "What does the word \"{w}\" mean?", "Use \"{w}\" in two example sentences.",
    "Explain \"{w}\" in simple words and give an example.",
]
SENTENCES = [
    "me and him goes to the shop yesterday", "their going to be late because of the traffic",
    "the report was wrote by the whole team", "i dont no what time the meeting start",
    "we was happy with the results of the test", "can you sent me the file before friday",
    "the cat sat on it's blanket all day", "she have three brothers and one sister",
    "less people came to the concert then last year", "the data shows that sales has gone up",
    "i seen that movie twice already", "who's book is this on the table",
    "please find attached the document you ask for", "the team are winning there first game",
    "its been a long time since we spoke", "he don't like waking up early on sundays",
    "we need to discuss about the budget", "i am agree with your opinion",
    "the children was playing outside until dark", "could of told me earlier about the change",
]
SENTENCE_REQUESTS = [
    "Fix the grammar in this sentence: {x}", "Rewrite this so it sounds professional: {x}",
    "Correct the mistakes and explain them: {x}",
]
PHRASES = [
    "Good morning", "Thank you very much", "Where is the train station?", "How much does this cost?",
    "I would like a coffee, please", "Nice to meet you", "Excuse me, can you help me?", "See you tomorrow",
    "I am learning your language", "What time is it?", "The bill, please", "Happy birthday",
]
LANGUAGES = ["French", "Spanish", "German", "Italian", "Portuguese", "Dutch", "Swedish", "Japanese"]
PHRASE_REQUESTS = ["How do you say \"{p}\" in {l}?", "Translate \"{p}\" into {l}."]
CHARACTERS = [
    "a lonely lighthouse keeper", "a robot who wants to be a chef", "a cat who runs a bookshop",
    "a girl who finds a map in her attic", "an old fisherman and a talking seagull", "a dragon afraid of fire",
    "a detective who is also a grandmother", "two astronauts stuck on Mars", "a boy who can talk to trees",
    "a clumsy wizard's apprentice", "a tiny snail on a long journey", "a knight who hates armour",
]
STORY_SETTINGS = [
    "in a small village", "on a rainy night", "during a snowstorm", "at a busy train station",
    "on the first day of spring", "in a city under the sea", "in a haunted castle", "on a pirate ship",
    "at a village fair", "in a forest where it never stops snowing",
]
CREATIVE_REQUESTS = [
    "Write a short story about {c} {s}.", "Tell me a bedtime story about {c} {s}.",
]
# Choices a visitor weighs.
CHOICES = [
    "working from home", "living in a big city", "living in the countryside", "buying a used car",
    "leasing a car", "an electric car", "a standing desk", "a gap year before university", "studying abroad",
    "learning to code at a bootcamp", "owning a dog in a flat", "a vegetarian diet", "solar panels on a house",
    "a four-day working week", "homeschooling", "online classes", "a smartwatch", "a tablet for a child",
    "a shared flat with friends", "a tiny house", "freelancing", "a part-time job while studying",
    "buying in bulk", "a credit union", "public transport instead of a car", "cycling to work",
    "open-plan offices", "a morning workout", "a language app", "paper books instead of an e-reader",
]
CHOICE_REQUESTS = ["What are the pros and cons of {x}?", "Is {x} a good idea? Give both sides."]
THINGS = [
    "board games", "podcasts about history", "hobbies", "houseplants", "classic films", "card games",
    "outdoor games", "science experiments", "word games", "easy instruments to learn", "travel destinations",
    "free apps for studying",
]
AUDIENCES = [
    "a complete beginner", "a ten-year-old", "a retired teacher", "a busy parent", "a student on a budget",
    "a group of friends", "someone who lives alone", "a family with toddlers",
]
THING_REQUESTS = ["Recommend five {t} for {a}."]
# Small sums with their numbers: a visitor tests a model on arithmetic and units.
WORD_PROBLEMS = [
    "A notebook costs {a} dollars. How much do {b} notebooks cost?",
    "A car drives at {a} kilometres per hour for {b} hours. How far does it go?",
    "What is {a} percent of {c}?", "What is {c} divided by {b}?", "What is {a} times {b}?",
    "A class has {c} pupils and each table seats {b}. How many tables are needed?",
    "I read {a} pages a day. How many days do I need for a book of {c} pages?",
    "A recipe needs {b} eggs for {a} people. How many eggs for {c} people?",
]
WHY = [
    "Why do cats purr?", "Why does bread go stale?", "Why do we yawn?", "Why do our fingers wrinkle in water?",
    "Why is the sea blue but the sand yellow?", "Why do we get goosebumps?", "Why do ice cubes crack in a drink?",
    "Why does a kettle whistle?", "Why do some people snore?", "Why do dogs wag their tails?",
    "Why do we have fingerprints?", "Why do stars twinkle?", "Why does popcorn pop?", "Why do birds sing at dawn?",
    "Why do apples turn brown when cut?", "Why are flamingos pink?", "Why does the Moon look bigger near the horizon?",
    "Why do our ears pop on a plane?", "Why does coffee keep people awake?", "Why is it hotter in summer?",
    "Why do balloons stick to the wall after rubbing them?", "Why does soap clean things?",
    "Why do we hiccup?", "Why do some trees stay green all year?", "Why does ice float?",
    "Why do zebras have stripes?", "Why do owls hunt at night?", "Why is gold so valuable?",
    "Why do prices go up over time?", "Why do we need to sleep at all?",
]


# A second group, planned after the first: more of the same shapes, and people, places, machines, histories.
MORE_ACTIVITIES = [
    "a wet camping weekend", "a ski trip on a budget", "a first marathon", "a home office in a small room",
    "a kitchen clean-out", "a new year's resolution that lasts", "a toddler's birthday", "a dinner for ten",
    "a barbecue for neighbours", "a school reunion", "a Halloween party", "a winter holiday at home",
    "a family film night", "a weekend without screens", "a trip to a big museum", "a first flat of my own",
    "moving to a new country", "a long-distance friendship", "a first job interview", "asking for a raise",
    "a week of packed lunches", "a tidy garage", "a cosy reading corner", "a new hobby after retirement",
    "a school talent show", "a fundraising dinner", "a craft afternoon with kids", "a hike with a dog",
    "a weekend in Edinburgh", "a day at the seaside", "a first visit to a gym", "a spring clean",
    "teaching a child to ride a bike", "a club's annual meeting", "a holiday on a narrowboat",
    "a farewell party for a friend", "a coding club for teenagers", "a small online shop", "a street photography project",
    "a walking tour of my own town",
]
MORE_STORIES = [
    "Sleeping Beauty", "Rapunzel", "Rumpelstiltskin", "The Frog Prince", "The Little Mermaid",
    "The Emperor's New Clothes", "The Snow Queen", "The Pied Piper of Hamelin", "Aladdin", "Ali Baba and the Forty Thieves",
    "Sinbad the Sailor", "Robin Hood", "King Arthur and the Round Table", "The Legend of Sleepy Hollow",
    "Rip Van Winkle", "The Hound of the Baskervilles", "A Study in Scarlet", "The Picture of Dorian Gray",
    "Dr Jekyll and Mr Hyde", "The Invisible Man", "Journey to the Centre of the Earth", "Twenty Thousand Leagues Under the Seas",
    "Kidnapped", "The Wind in the Willows", "Winnie-the-Pooh", "The Railway Children", "Anne of Green Gables",
    "Five Children and It", "The Swiss Family Robinson", "Sense and Sensibility", "Persuasion", "Middlemarch",
    "David Copperfield", "A Tale of Two Cities", "Bleak House", "The Scarlet Letter", "Uncle Tom's Cabin",
    "The Boy Who Cried Wolf", "The Fox and the Grapes", "The Ant and the Grasshopper",
]
MORE_DISHES = [
    "pad thai", "a Spanish tortilla", "shakshuka", "minestrone", "a chicken noodle soup", "a tuna pasta bake",
    "falafel", "a vegetable korma", "egg fried noodles", "a carrot cake", "shortbread", "scones", "flapjacks",
    "pancakes without eggs", "a berry crumble", "lemonade", "a mango lassi", "a Caesar salad", "a club sandwich",
    "baked potatoes", "sweet potato fries", "stuffed peppers", "a cauliflower cheese", "ratatouille",
    "a mushroom soup", "fish pie", "a spinach quiche", "corn bread", "a yoghurt dip", "a peanut sauce",
]
MORE_WORDS = [
    "gregarious", "obsolete", "lucid", "aloof", "diligent", "zealous", "verbose", "concise", "austere",
    "arbitrary", "inevitable", "plausible", "redundant", "subtle", "vivid", "whimsical", "mundane", "novice",
    "veteran", "mentor", "protagonist", "antagonist", "narrator", "chorus", "sonnet", "haiku", "limerick",
    "fable", "parable", "myth", "legend", "archipelago", "peninsula", "delta", "glacier", "tundra",
    "savanna", "monsoon", "drought", "humidity", "photosynthetic", "mammal", "reptile", "amphibian",
    "invertebrate", "predator", "parasite", "symbiosis", "dividend", "mortgage", "budget", "tariff",
    "subsidy", "franchise", "startup", "prototype", "firmware", "cache", "encryption", "pixel",
]
GADGETS = [
    "a microwave oven", "a dishwasher", "a washing machine", "a vacuum cleaner", "an electric kettle",
    "a toaster", "a smoke alarm", "a thermostat", "a light switch", "a battery", "a solar panel", "a wind turbine",
    "an electric motor", "a bicycle gear", "a car engine", "a hybrid car", "an elevator", "an escalator",
    "a touchscreen", "a digital camera", "a printer", "a scanner", "a barcode scanner", "a contactless card",
    "a hearing aid", "a thermometer", "a pressure cooker", "an air conditioner", "a heat pump", "a lock and key",
    "a zip", "a parachute", "a hot air balloon", "a submarine", "a lighthouse", "a radio", "a speaker",
    "a microphone", "noise-cancelling headphones", "a smart speaker",
]
GADGET_REQUESTS = ["How does {g} work?", "Explain how {g} works, step by step, in plain words."]
HISTORIES = [
    "chocolate", "coffee", "tea", "the bicycle", "the piano", "chess", "football", "the Olympic Games",
    "the postal service", "newspapers", "photography", "cinema", "radio", "television", "the computer mouse",
    "video games", "the printing press", "paper", "glass", "soap", "pizza", "the sandwich", "ice cream",
    "jeans", "umbrellas", "clocks", "eyeglasses", "the toothbrush", "libraries", "universities",
]
HISTORY_REQUESTS = ["Give me a short history of {h}.", "Where did {h} come from?"]
PEOPLE = [
    "Ada Lovelace", "Alan Turing", "Marie Curie", "Isaac Newton", "Galileo Galilei", "Charles Darwin",
    "Nikola Tesla", "Thomas Edison", "Florence Nightingale", "Leonardo da Vinci", "Michelangelo",
    "Vincent van Gogh", "Frida Kahlo", "Wolfgang Amadeus Mozart", "Ludwig van Beethoven", "William Shakespeare",
    "Jane Austen", "Charles Dickens", "Mark Twain", "Cleopatra", "Julius Caesar", "Alexander the Great",
    "Genghis Khan", "Napoleon Bonaparte", "Queen Victoria", "Abraham Lincoln", "Nelson Mandela",
    "Mahatma Gandhi", "Martin Luther King Jr.", "Rosa Parks", "Amelia Earhart", "Neil Armstrong",
    "Yuri Gagarin", "Albert Einstein", "Grace Hopper", "Confucius", "Socrates", "Aristotle", "Marco Polo",
    "Ibn Battuta",
]
PEOPLE_REQUESTS = ["Who was {p}, and why are they remembered?", "Tell me three facts about {p}."]
COUNTRIES = [
    "Canada", "Mexico", "Brazil", "Argentina", "Chile", "Peru", "Norway", "Finland", "Poland", "Greece",
    "Portugal", "Ireland", "Scotland", "Egypt", "Morocco", "Kenya", "Nigeria", "South Africa", "Ethiopia",
    "India", "Nepal", "Thailand", "Vietnam", "Indonesia", "the Philippines", "South Korea", "Mongolia",
    "New Zealand", "Turkey", "Iran",
]
COUNTRY_REQUESTS = ["What is {c} known for?", "Tell me five interesting facts about {c}.",
                    "What would a first-time visitor to {c} enjoy?"]
MORE_WORD_PROBLEMS = [
    "A bus leaves every {b} minutes. How many buses leave in {a} hours?",
    "A shirt costs {c} dollars and is {a} percent off. What is the sale price?",
    "If I walk {a} kilometres a day, how far do I walk in {b} weeks?",
    "What is the average of {a}, {b} and {c}?", "How many minutes are there in {a} hours and {b} minutes?",
    "A tank holds {c} litres and fills at {b} litres a minute. How long does it take to fill?",
]


def word_problems(forms: list[str] = WORD_PROBLEMS, seed: int = 5, per_form: int = 40) -> list[str]:
    """`per_form` versions of each word problem with small whole numbers, the same for a given seed."""
    rng = random.Random(seed)
    out = []
    for form in forms:
        made = set()
        while len(made) < per_form:
            made.add(form.format(a=rng.randint(2, 19), b=rng.randint(2, 12), c=rng.randint(3, 40) * 10))
        out += sorted(made)
    return out


def requests() -> list[str]:
    """Every request of this family, in a fixed order."""
    out = [r.format(a=a) for a in ACTIVITIES for r in ACTIVITY_REQUESTS]
    out += [r.format(s=s) for s in STORIES for r in STORY_REQUESTS]
    out += [r.format(d=d) for d in DISHES for r in DISH_REQUESTS]
    out += [r.format(w=w) for w in WORDS for r in WORD_REQUESTS]
    out += [r.format(x=x) for x in SENTENCES for r in SENTENCE_REQUESTS]
    out += [r.format(p=p, l=lang) for p in PHRASES for lang in LANGUAGES for r in PHRASE_REQUESTS]
    out += [r.format(c=c, s=s) for c in CHARACTERS for s in STORY_SETTINGS for r in CREATIVE_REQUESTS]
    out += [r.format(x=x) for x in CHOICES for r in CHOICE_REQUESTS]
    out += [r.format(t=t, a=a) for t in THINGS for a in AUDIENCES for r in THING_REQUESTS]
    out += word_problems() + WHY
    return out + more_requests()


def more_requests() -> list[str]:
    """The second group, in a fixed order after the first (data planned from the first is unchanged)."""
    out = [r.format(a=a) for a in MORE_ACTIVITIES for r in ACTIVITY_REQUESTS]
    out += [r.format(s=s) for s in MORE_STORIES for r in STORY_REQUESTS]
    out += [r.format(d=d) for d in MORE_DISHES for r in DISH_REQUESTS]
    out += [r.format(w=w) for w in MORE_WORDS for r in WORD_REQUESTS]
    out += [r.format(g=g) for g in GADGETS for r in GADGET_REQUESTS]
    out += [r.format(h=h) for h in HISTORIES for r in HISTORY_REQUESTS]
    out += [r.format(p=p) for p in PEOPLE for r in PEOPLE_REQUESTS]
    out += [r.format(c=c) for c in COUNTRIES for r in COUNTRY_REQUESTS]
    return out + word_problems(MORE_WORD_PROBLEMS, seed=6)
