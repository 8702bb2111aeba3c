"""A fourth family of templated chat requests: what visitors type, in forms the earlier families lack.

The first three families (draft_prompts.py) were all planned by the first two data sittings, so a later
sitting's chat prompts came almost only from self-instruct: questions the 135M target wrote itself,
long and vague ("I'm planning a trip and can you assist me?"). This family adds short, concrete requests
of the kinds a demo's visitors send: explanations and comparisons, everyday writing (messages, notes,
replies), advice, facts, and code in several languages. Its topics and tasks are new: none of the
earlier families' and none of the benchmark prompt files' (those were read only to leave their topics
out; tests/test_draft_data.py checks that no benchmark prompt is close to a templated request).
"""
from __future__ import annotations

TOPICS = [
    "the Eiffel Tower", "the Amazon River", "the Sahara", "the Himalayas", "Mount Everest", "the Pacific Ocean",
    "the Nile", "Venice", "Iceland", "Japan's bullet trains", "the Panama Canal", "the Moon's phases",
    "eclipses", "the northern lights", "meteor showers", "the Big Bang", "exoplanets", "the Milky Way",
    "telescopes", "the International Space Station", "sound waves", "friction", "static electricity",
    "the boiling point of water", "atoms", "molecules", "chemical reactions", "acids and bases", "rust",
    "fermentation", "yeast", "mushrooms", "ferns", "cacti", "pollination", "migration of birds", "penguins",
    "elephants", "dolphins", "ants", "spiders", "frogs", "whales", "hibernation", "camouflage in animals",
    "food chains", "wetlands", "soil", "fossils", "the Stone Age", "the Aztecs", "ancient Greece",
    "the Byzantine Empire", "the Ottoman Empire", "the Mongol Empire", "samurai", "pirates", "knights",
    "the Magna Carta", "the Reformation", "the age of exploration", "the abolition of slavery",
    "women's suffrage", "the space race", "the fall of the Berlin Wall", "the invention of the telephone",
    "the steam engine", "the light bulb", "the wheel", "writing systems", "calendars", "maps", "money",
    "banks", "interest rates", "index funds", "retirement savings", "insurance",
    "small businesses", "marketing", "job interviews", "remote work", "teamwork", "leadership", "negotiation",
    "giving feedback", "active listening", "emotional intelligence", "motivation", "goal setting",
    "journaling", "minimalism", "decluttering", "moving house", "first aid", "hydration", "stretching",
    "posture", "running shoes", "cycling", "swimming", "hiking", "rock climbing", "tennis", "basketball",
    "the offside rule", "knitting", "pottery", "origami", "calligraphy", "woodworking", "sourdough",
    "spices", "olive oil", "cheese", "fermented foods", "vegetarian cooking", "meal planning", "street food",
    "opera", "the guitar", "the orchestra", "hip hop", "film noir", "animation", "comic books",
    "graphic design", "typography", "architecture", "skyscrapers", "bridges", "tunnels", "urban planning",
    "public transport", "electric scooters", "self-driving cars", "drones", "GPS", "Wi-Fi", "Bluetooth",
    "QR codes", "barcodes", "email spam", "phishing", "two-factor authentication", "backups",
    "the command line", "regular expressions", "JSON", "APIs", "web browsers", "search engines",
    "compilers", "virtual machines", "containers", "microservices", "load balancers", "DNS",
    "floating-point numbers", "prime numbers", "probability", "statistics", "averages", "percentages",
    "fractions", "geometry", "the Pythagorean theorem", "infinity", "logic puzzles", "game theory",
]
REQUESTS = [
    "I'm curious about {t}. Where should I start?", "Explain {t} like I'm five.",
    "What are three surprising things about {t}?", "Give me a quick overview of {t}.",
    "Write a short introduction to {t} for a school newsletter.", "What do people often get wrong about {t}?",
    "Can you give me a brief explanation of {t}, with an example?", "Teach me something new about {t}.",
    "What is the most important thing to know about {t}?", "Write a four-line poem about {t}.",
    "Describe {t} to someone who has never heard of it.", "Give me a short quiz on {t}: three questions.",
    "Why do people find {t} interesting?", "What are some good books or resources about {t}?",
    "Write a short dialogue between a teacher and a student about {t}.",
    "Explain {t} in three bullet points.",
]
# Two things set side by side, in two forms.
PAIRS = [
    ("a lake", "a pond"), ("an alligator", "a crocodile"), ("a simile", "a metaphor"), ("RAM", "storage"),
    ("a latte", "a cappuccino"), ("baking soda", "baking powder"), ("an asteroid", "a meteor"),
    ("speed", "velocity"), ("a hurricane", "a typhoon"), ("TCP", "UDP"), ("Python", "JavaScript"),
    ("stocks", "bonds"), ("a frog", "a toad"), ("a rabbit", "a hare"), ("mass", "weight"),
    ("a novel", "a novella"), ("a violin", "a viola"), ("an LED", "an incandescent bulb"),
    ("a debit card", "a prepaid card"), ("a hub", "a switch"), ("SQL", "NoSQL databases"),
    ("a process", "a thread"), ("a compiler", "an interpreter"), ("affect", "effect"),
    ("a democracy", "a monarchy"), ("an ocean", "a sea"), ("a mountain", "a hill"),
    ("a moth", "a butterfly"), ("a herb", "a spice"), ("jam", "jelly"), ("a tortoise", "a turtle"),
    ("renting", "buying a home"), ("a résumé", "a CV"), ("an app", "a website"), ("git merge", "git rebase"),
]
PAIR_REQUESTS = [
    "How is {a} different from {b}?", "Compare {a} and {b} in a few sentences.",
]
WRITING = [
    "Write a short message congratulating a colleague on a promotion.",
    "Write a polite reminder to a friend who still has my book.",
    "Write a short note to put on a shared fridge asking people to label their food.",
    "Write a text message to cancel a dinner reservation politely.",
    "Write a short welcome message for a new member of a book club.",
    "Write a reply declining a meeting invitation because I have a conflict.",
    "Write a short bio for a freelance graphic designer.",
    "Write a two-line toast for a friend's wedding.",
    "Write a short announcement that the office will be closed on Monday.",
    "Write an out-of-office reply for a week of holiday.",
    "Write a message to a landlord reporting a broken heater.",
    "Write a short review of a café with great coffee and slow service.",
    "Write a get-well-soon card for a coworker.",
    "Write a short speech to open a school science fair.",
    "Write a LinkedIn post announcing that I started a new job.",
    "Write a short complaint about a late delivery, staying polite.",
    "Write a note to a babysitter with the evening's routine.",
    "Write a message asking a professor for an extension on an essay.",
    "Write a short description of a lost umbrella for a lost-and-found board.",
    "Write three slogans for a neighbourhood clean-up day.",
    "Write a short invitation to a board game night.",
    "Write a paragraph introducing myself to a new team.",
    "Write a short farewell message to a colleague who is retiring.",
]
QUESTIONS = [
    "How many bones are there in the human body?", "What is the largest ocean on Earth?",
    "How far is the Moon from the Earth?", "Who painted the Mona Lisa?", "What is the speed of sound?",
    "How many continents are there, and what are they?", "What is the chemical symbol for gold?",
    "Why is the ocean salty?", "How do airplanes stay in the air?", "Why do we have leap seconds?",
    "How does a refrigerator keep food cold?", "Why do onions make people cry?", "How do bees make honey?",
    "What causes thunder?", "How does a compass work?",
    "What is a light-year?", "Why is the Dead Sea called dead?", "How long does it take light from the Sun to reach us?",
    "What is 12 times 17?", "What is 3/4 as a percentage?", "How many seconds are there in a day?",
    "Convert 100 degrees Fahrenheit to Celsius.", "What is the square root of 144?",
    "If I save 50 dollars a week, how much do I have after a year?",
    "Is it safe to drink water from a mountain stream?",
    "What should I do if I get stung by a bee?", "How can I tell if an egg is still fresh?",
    "What's a good way to remember people's names?", "How do I keep basil alive indoors?",
    "How can I make my phone battery last longer?", "What are some tips for a long car journey with children?",
    "How do I get rid of fruit flies in the kitchen?", "What is a good stretch for a stiff neck?",
]
CODE_TASKS = [
    "checks whether a list is sorted", "converts a string to snake_case", "returns the index of the smallest element",
    "swaps the keys and values of a dictionary", "checks whether a number is a perfect square",
    "returns every other element of a list", "counts how often each character appears", "zips two lists into a dictionary",
    "converts seconds into hours, minutes and seconds", "checks whether a string contains only digits",
    "returns the last n lines of a file", "truncates a string to a maximum length with an ellipsis",
    "computes compound interest", "returns the intersection of two sets", "pads a number with leading zeros",
    "finds all the even numbers in a list", "converts a list of strings to integers", "checks whether a date is a weekend",
    "computes the area of a circle", "returns the number of days between two dates",
]
CODE_REQUESTS = [
    "Write a Python function that {t}.", "Write a JavaScript function that {t}.", "Write a Java method that {t}.",
    "Write a C# method that {t}.", "Write a Kotlin function that {t}.", "Write a Ruby method that {t}.",
    "Show me a short Python example that {t}, and explain each line.",
]
HOWTO = [
    "rename many files at once on Linux", "check my Python version", "write a docstring", "profile a slow Python function",
    "use a dictionary in Python", "handle exceptions in Python", "make an HTTP request in JavaScript",
    "write a for loop in Bash", "resolve a merge conflict in git", "write a good commit message",
    "make a website load faster", "learn to code as an adult", "iron a shirt", "clean a cast-iron pan",
    "sharpen a kitchen knife", "write a thank-you letter after an interview", "make cold brew coffee",
    "repot a plant", "wash a wool sweater", "save for a holiday", "organise my email inbox",
    "prepare a short presentation", "take better photos with my phone",
]
HOWTO_REQUESTS = ["How do I {h}?", "What's the easiest way to {h}?"]


def requests() -> list[str]:
    """Every request of this family, in a fixed order."""
    out = [r.format(t=t) for t in TOPICS for r in REQUESTS]
    out += [r.format(a=a, b=b) for a, b in PAIRS for r in PAIR_REQUESTS]
    out += [r.format(t=t) for t in CODE_TASKS for r in CODE_REQUESTS]
    out += [r.format(h=h) for h in HOWTO for r in HOWTO_REQUESTS]
    return out + WRITING + QUESTIONS
