"""What the SmolLM2 draft is distilled on: prompts like the ones people type, from offline sources.

Three kinds, as the app's users write them:
- chat: user requests wrapped in the model's chat template (half of all prompts). Some are
  written by the target itself (self-instruct: it continues an open user turn, Wang et al.
  2023), the others come from templates over the topic lists below, in everyday_requests.py and in
  task_requests.py, so short factual questions, lists, everyday writing and code requests appear;
- code: raw completions of function headers (and their docstrings) from the Python standard
  library's training split (`corpus.py`), the same split the bundled pair trains on;
- prose: raw completions of the opening sentences of paragraphs of Python's own documentation
  (`pydoc_data.topics`, shipped with every interpreter).
Nothing here needs the network. A fixed hash of each prompt's text sends ~3% of them to a
validation split that the draft never trains on. The benchmark's prompt files are written separately;
tests/test_draft_data.py lists the few that come close to a templated request (and why each is there).
A plan (`mix`) leaves out every request that holds a benchmark prompt's text, so data written from now
on never holds a prompt that chooses or measures a draft; the templates themselves stay as they were,
the record of what earlier drafts trained on.
"""
from __future__ import annotations

import functools
import hashlib
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from ..paths import BENCHMARKS
from . import everyday_requests, task_requests

# The benchmark's prompt files: they choose drafts and k (heldout), measure figures (unseen) and race
# (smollm2-prompts). A training plan holds none of their texts.
EVALUATION_FILES = ("heldout-prompts.json", "unseen-prompts.json", "smollm2-prompts.json")

VALIDATION_MODULUS = 32

TOPICS = [
    "photosynthesis", "the water cycle", "black holes", "inflation", "vaccines", "the French Revolution",
    "machine learning", "compound interest", "plate tectonics", "the immune system", "climate change",
    "the Roman Empire", "electric cars", "the stock market", "recycling", "volcanoes", "DNA", "gravity",
    "the internet", "blockchain", "the moon landing", "renewable energy", "sleep", "meditation", "coffee",
    "the printing press", "democracy", "supply and demand", "bees", "rainforests", "the human heart",
    "quantum computers", "solar panels", "earthquakes", "the Renaissance", "antibiotics", "jazz", "chess",
    "the Olympic Games", "tides", "rainbows", "hash tables", "recursion", "binary search", "encryption",
    "operating systems", "databases", "version control", "unit testing", "HTTP", "caching", "sorting algorithms",
    "neural networks", "public speaking", "time management", "healthy eating", "marathon training",
    "learning a language", "saving money", "gardening", "baking bread", "photography", "camping",
]
REQUESTS = [
    "Explain {t} in simple terms.", "What is {t}?", "Give me three interesting facts about {t}.",
    "Write a short paragraph about {t}.", "Why is {t} important?", "Summarize what you know about {t}.",
    "List five key points about {t}.", "How would you teach {t} to a beginner?",
    "Write a short poem about {t}.", "What are the pros and cons of {t}?", "Write a tweet about {t}.",
    "Describe {t} in one sentence.", "What are common misconceptions about {t}?",
]
CODE_TASKS = [
    "checks whether a string is a palindrome", "returns the n-th Fibonacci number", "sorts a list of dictionaries by a key",
    "counts the words in a text file", "flattens a nested list", "removes duplicates from a list while keeping order",
    "computes the factorial of a number", "merges two sorted lists", "finds the largest element in a list",
    "converts Celsius to Fahrenheit", "checks whether a number is prime", "reverses the words in a sentence",
    "reads a CSV file and returns its rows", "computes the average of a list of numbers", "validates an email address",
    "finds the most common element in a list", "implements binary search", "capitalizes every word in a string",
    "returns the GCD of two numbers", "groups a list of words by their first letter", "computes a moving average",
    "parses a date string", "counts vowels in a string", "transposes a matrix", "generates all permutations of a list",
]
CODE_REQUESTS = [
    "Write a Python function that {t}.", "How do I write a function in Python that {t}?",
    "Write a JavaScript function that {t}.", "Show me Python code that {t}, with a docstring.",
]
HOWTO = [
    "read a file line by line in Python", "center a div in CSS", "undo the last git commit", "make a cup of tea",
    "write a cover letter", "change a flat tire", "create a virtual environment in Python", "prepare for an interview",
    "write a unit test with pytest", "reverse a linked list", "start a vegetable garden", "negotiate a salary",
    "use list comprehensions in Python", "set up SSH keys", "improve my handwriting", "train for a 5k run",
]
EXTRA = [
    "Translate 'Where is the train station?' into French.", "What is the capital of Australia?",
    "Write an email to my manager asking for a day off.", "Give me a recipe for a simple tomato soup.",
    "What is 15% of 240?", "Name the planets of the solar system in order.", "Write a haiku about autumn.",
    "What is the difference between a list and a set in Python?", "Suggest five names for a pet cat.",
    "Write a limerick about a programmer.", "How many days are there in a leap year?",
    "Give me a packing list for a beach holiday.", "Who wrote Pride and Prejudice?",
]

# A third family: more of what people type in a workshop: further topics and request forms,
# code tasks in other languages, how-tos and requests written in other languages. The benchmark's prompt
# files were read while writing it only to leave their topics and tasks out (tests/test_draft_data.py checks).
MORE_TOPICS = [
    "the Great Wall of China", "octopuses", "the Silk Road", "the Industrial Revolution", "glaciers", "coral reefs",
    "the speed of light", "electricity", "magnets", "the periodic table", "the ancient Egyptians", "the Vikings",
    "Shakespeare", "impressionist painting", "the violin", "football", "yoga", "procrastination", "habits",
    "friendship", "volunteering", "budgeting", "mortgages", "taxes", "smartphones", "passwords", "cloud computing",
    "open-source software", "spreadsheets", "artificial intelligence", "robots", "3D printing", "satellites", "Mars",
    "the Sun", "comets", "dinosaurs", "evolution", "bacteria", "the brain", "memory", "stress", "vitamins",
    "houseplants", "composting", "honey", "chocolate", "tea", "pizza", "rice", "trains", "airplanes", "bicycles",
    "cities", "libraries", "museums", "podcasts", "board games", "video games", "the piano", "poetry", "novels",
    "mythology", "the Cold War", "the United Nations", "elections", "wind turbines", "nuclear power", "batteries",
    "deserts", "Antarctica", "hurricanes", "lightning", "the ocean", "sharks", "owls", "the Middle Ages", "castles",
]
MORE_REQUESTS = [
    "Tell me about {t}.", "Can you explain {t} to a child?", "How does {t} work?", "What is the history of {t}?",
    "Give me a fun fact about {t}.", "Write three quiz questions about {t}, with answers.",
    "What should a beginner know about {t}?", "Explain {t} in two sentences.", "Write a short story about {t}.",
    "What are the biggest myths about {t}?", "Give me a simple analogy for {t}.",
    "Write the opening paragraph of a blog post about {t}.", "Make a one-week study plan for learning about {t}.",
    "What questions could I ask an expert on {t}?", "Sum up {t} as a bulleted list of key ideas.",
]
MORE_CODE_TASKS = [
    "reverses a string", "checks whether two strings are anagrams", "converts a Roman numeral to an integer",
    "finds the second largest number in a list", "counts the lines in a file", "checks whether a year is a leap year",
    "computes the median of a list", "splits a list into chunks of size n", "finds the common elements of two lists",
    "returns the prime factors of a number", "generates a random password", "removes punctuation from a string",
    "finds the longest word in a sentence", "rotates a list by k positions", "computes the dot product of two vectors",
    "checks whether the parentheses in a string are balanced", "returns the n-th row of Pascal's triangle",
    "converts a number to binary", "sums the digits of a number", "finds the missing number in a list of 1 to n",
]
MORE_CODE_REQUESTS = [
    "Write a TypeScript function that {t}.", "Write a C function that {t}.", "Write a Rust function that {t}.",
    "Can you write Python code that {t}? Please explain it.", "Write a Go function that {t}.",
]
MORE_HOWTO = [
    "install a Python package with pip", "write a good README", "build a small REST API with Flask", "use git branches",
    "debug a Python script", "format a date in JavaScript", "back up my photos", "learn to touch type",
    "write a resignation letter", "plan a birthday party", "boil an egg", "fix a leaky faucet",
    "stay focused while studying", "write a SQL join", "deploy a static website", "read a JSON file in Python",
]
OTHER_LANGUAGES = [
    "Explique-moi comment fonctionne la photosynthèse.", "Quels sont les avantages du vélo en ville ?",
    "Écris un petit poème sur la mer.", "Donne-moi trois conseils pour apprendre l'anglais.",
    "Comment faire une omelette ?", "Pourquoi les chats ronronnent-ils ?",
    "¿Cuál es la diferencia entre un virus y una bacteria?", "Escribe un correo corto para reservar una mesa.",
    "Dame tres consejos para dormir mejor.", "¿Cómo funciona un motor eléctrico?",
    "Explica qué es la inteligencia artificial.", "¿Qué puedo cocinar con arroz y huevos?",
    "Erkläre mir, wie ein Regenbogen entsteht.", "Was sind die Vorteile von Sport?",
    "Schreibe eine kurze Geburtstagskarte für meine Schwester.", "Wie lerne ich am besten Vokabeln?",
    "Spiegami cos'è la gravità.", "Quali sono i monumenti più famosi di Roma?",
    "Explique o que é uma célula.", "Quais são os planetas do sistema solar?",
]
MORE_EXTRA = [
    "What time zone is Tokyo in?", "Convert 5 miles to kilometers.", "Write a birthday message for my best friend.",
    "What's a good name for a bakery?", "Give me a workout I can do at home in 20 minutes.",
    "Write a short apology for missing a meeting.", "What should I pack for a weekend hiking trip?",
    "Help me write a text inviting friends to dinner on Saturday.", "What is the tallest mountain in Africa?",
    "Give me five ideas for a science fair project.", "Rewrite this sentence to sound more formal: we gotta fix this asap.",
    "What are some good questions to ask at the end of a job interview?", "Plan a three-day trip to Lisbon.",
    "Write a product description for a reusable water bottle.", "How many minutes are there in a week?",
    "Explain the rules of tic-tac-toe.", "Write a riddle and give its answer.", "What is the boiling point of water in Fahrenheit?",
]


@dataclass(frozen=True)
class PromptSpec:
    kind: str        # "chat", "code" or "prose"
    text: str        # the user's message (chat) or the raw text to continue (code, prose)

    @property
    def chat(self) -> bool:
        return self.kind == "chat"


def is_validation(text: str) -> bool:
    """True for the ~3% of prompts kept for validation (stable across runs and machines)."""
    return int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16) % VALIDATION_MODULUS == 0


def template_requests() -> list[str]:
    """Every templated chat request (topics x requests, code tasks x code requests, how-tos, extras, other
    languages), then the fourth family's (everyday_requests.py) and the fifth's (task_requests.py), in a fixed
    order: a new family goes last, so the record of earlier data is unchanged."""
    topics, requests = TOPICS + MORE_TOPICS, REQUESTS + MORE_REQUESTS
    howto = HOWTO + MORE_HOWTO
    out = [r.format(t=t) for t in topics for r in requests]
    out += [r.format(t=t) for t in CODE_TASKS for r in CODE_REQUESTS]      # the new forms only with the new tasks
    out += [r.format(t=t) for t in MORE_CODE_TASKS for r in CODE_REQUESTS + MORE_CODE_REQUESTS]
    out += [f"How do I {h}?" for h in howto] + [f"Explain step by step how to {h}." for h in howto]
    return out + EXTRA + MORE_EXTRA + OTHER_LANGUAGES + everyday_requests.requests() + task_requests.requests()


_DEF = re.compile(r"^(?P<indent>[ \t]*)(?:async\s+)?def [A-Za-z_]\w*\(.*$")


def code_prefixes(texts: list[str]) -> list[str]:
    """Each public function of the sources, cut after its `def` line and its docstring's first line."""
    out = []
    for text in texts:
        lines = text.splitlines()
        for i, line in enumerate(lines):
            m = _DEF.match(line)
            if not m or line.rstrip().endswith(",") or "def _" in line:
                continue
            head = [line[len(m.group("indent")):]]
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if nxt.startswith(('"""', "'''")):
                head.append("    " + nxt)
            prefix = "\n".join(head)
            if 12 <= len(prefix) <= 300:
                out.append(prefix)
    return out


def prose_prefixes() -> list[str]:
    """The first sentence (or two short ones) of each prose paragraph of Python's documentation."""
    import pydoc_data.topics as topics
    out = []
    for page in topics.topics.values():
        for para in page.split("\n\n"):
            para = " ".join(para.split())
            if len(para) < 120 or para.startswith(("*", ">>>", "=", "-", "+", "|", "Changed in", "New in")):
                continue
            sentences = re.split(r"(?<=[.!?])\s+", para)
            head = sentences[0] if len(sentences[0]) >= 60 else " ".join(sentences[:2])
            if 40 <= len(head) <= 400:
                out.append(head)
    return out


def normal_text(text: str) -> str:
    """Whitespace runs as one space, trimmed, lower case: how a prompt is compared with another."""
    return re.sub(r"\s+", " ", text).strip().lower()


def evaluation_texts(folder: Path = BENCHMARKS) -> list[str]:
    """The benchmark prompts' texts (whitespace and case normalized); none where the files are absent,
    as in an installed package, which has no benchmarks/."""
    texts = []
    for name in EVALUATION_FILES:
        path = Path(folder) / name
        if path.is_file():
            texts += [normal_text(p["text"]) for p in json.loads(path.read_text(encoding="utf-8"))]
    return texts


def holds_evaluation_prompt(text: str, evaluation: list[str]) -> bool:
    """True when `text` is, or contains, a benchmark prompt (whitespace and case aside)."""
    mine = normal_text(text)
    return any(e in mine for e in evaluation)


def request_source(text: str) -> str:
    """Where a chat request came from: "everyday" (the fourth family, everyday_requests.py), "tasks" (the
    fifth, task_requests.py), "templated" (the first three families) or "self-instruct" (written by the target)."""
    everyday, tasks, templated = _families()
    if text in everyday:
        return "everyday"
    if text in tasks:
        return "tasks"
    return "templated" if text in templated else "self-instruct"


@functools.cache
def _families() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(the everyday family's requests, the task family's, the first three families'), built on first use,
    not at import."""
    everyday, tasks = frozenset(everyday_requests.requests()), frozenset(task_requests.requests())
    return everyday, tasks, frozenset(template_requests()) - everyday - tasks


def mix(self_instruct: list[str], code: list[str], prose: list[str], seed: int = 0,
        seen: frozenset[str] | set[str] = frozenset(), evaluation: list[str] | None = None) -> list[PromptSpec]:
    """Every distinct chat request (templates and self-instruct), then code and prose prompts in
    proportion (0.6 and 0.4 code and prose prompts per chat prompt), shuffled. Texts in `seen` (planned
    by another work folder) and texts holding a benchmark prompt (`evaluation`, by default the
    benchmark files') are taken out of each pool first, so the proportions hold over what is new."""
    rng = random.Random(seed)
    evaluation = evaluation_texts() if evaluation is None else evaluation

    def take(pool: list[str], n: int) -> list[str]:
        pool = sorted(t for t in set(pool) - set(seen) if not holds_evaluation_prompt(t, evaluation))
        rng.shuffle(pool)
        return pool[:n]

    chat = take(template_requests() + self_instruct, 10**9)
    specs = [PromptSpec("chat", t) for t in chat]
    specs += [PromptSpec("code", t) for t in take(code, len(chat) * 6 // 10)]
    specs += [PromptSpec("prose", t) for t in take(prose, len(chat) * 4 // 10)]
    rng.shuffle(specs)
    return specs
