"""The project's own training prompts for the distilled draft: composed from word lists, never benchmark text.

They cover the kinds of requests a chat model meets (writing, role-play, reasoning, arithmetic, code, science
and humanities questions, translation), and a second stage wraps passages the target itself wrote in
summarise / extract / answer-from-the-document requests, so the draft also learns to copy from its context.
Composition uses a seeded `random.Random`, so the same seed gives the same prompts.
"""

from __future__ import annotations

import random

TOPICS = [
    "the ocean", "volcanoes", "a rainy city", "honeybees", "the moon landing", "coffee", "chess", "a lighthouse",
    "the printing press", "electric cars", "mountain hiking", "a small bakery", "friendship", "winter mornings",
    "the internet", "ancient Rome", "recycling", "a robot learning to paint", "jazz music", "the water cycle",
    "photosynthesis", "a lost dog", "space travel", "the history of bicycles", "learning a new language",
    "a train journey", "gardening", "the Great Wall of China", "solar power", "a haunted house", "birthdays",
    "public libraries", "earthquakes", "a football match", "the first day of school", "rain forests", "pirates",
    "the desert at night", "a time machine", "dinosaurs", "kindness", "a busy airport", "street food",
    "the Northern Lights", "a village market", "smartphones", "climate change", "a music festival", "owls",
    "the human heart", "a snowstorm", "an old bookshop", "the stock market", "yoga", "a detective story",
    "the Renaissance", "honey", "a school science fair", "the Amazon river", "video games",
]
FORMS = [
    "poem", "short story", "haiku", "blog post", "product description", "speech", "letter to a friend",
    "news report", "diary entry", "limerick", "motivational message", "travel guide paragraph", "song chorus",
]
PERSONAS = [
    "a pirate captain", "a medieval knight", "a friendly librarian", "a detective in 1920s London",
    "a tour guide in Paris", "an astronaut on the space station", "a chef in a busy kitchen", "a wise old wizard",
    "a sports commentator", "a museum curator", "a kindergarten teacher", "a travel agent", "a park ranger",
]
REQUESTS = [
    "Introduce yourself and describe your typical day.", "Give me advice for my first week at a new job.",
    "Tell me about the most exciting moment of your career.", "Explain how you would spend a perfect weekend.",
    "Describe the place where you work.", "Recommend three things I should try and say why.",
]
CONCEPTS = [
    "gravity", "photosynthesis", "inflation", "the immune system", "black holes", "supply and demand", "DNA",
    "machine learning", "the greenhouse effect", "democracy", "plate tectonics", "vaccines", "electric current",
    "the French Revolution", "compound interest", "evolution", "the Industrial Revolution", "entropy",
    "the scientific method", "the water cycle", "nuclear fusion", "the Cold War", "probability", "sound waves",
    "the Silk Road", "antibiotics", "the theory of relativity", "cloud computing", "impressionist painting",
    "the printing press", "ocean tides", "the human brain", "renewable energy", "the Roman Empire", "magnetism",
]
CONCEPT_TASKS = [
    "Explain {c} in simple terms.", "What is {c}? Give an example.", "Why is {c} important?",
    "Explain {c} to a ten-year-old.", "What are common misconceptions about {c}?",
    "Write three quiz questions about {c}, with answers.", "Summarize the key ideas of {c} in a few sentences.",
    "Compare {c} and {d}.", "What is the history of {c}?", "List five facts about {c}.",
]
CODE_TASKS = [
    "reverses a string", "checks whether a number is prime", "returns the n-th Fibonacci number",
    "counts the vowels in a sentence", "finds the largest element of a list", "removes duplicates from a list",
    "converts Celsius to Fahrenheit", "checks whether a word is a palindrome", "sorts a list of names by length",
    "merges two sorted lists", "computes the factorial of n", "counts how often each word occurs in a text",
    "returns the sum of the digits of a number", "flattens a nested list", "validates an email address",
    "computes the average of a list of numbers", "finds the second smallest number in a list",
    "reads a CSV file and prints each row", "converts a binary string to an integer", "capitalizes every word",
]
LANGUAGES = ["Python", "JavaScript", "Java", "C", "Go", "Rust", "C++", "TypeScript"]
CODE_EXTRAS = ["", " Add comments.", " Include a short example of how to call it.", " Explain how it works.",
               " Keep it short.", " Write a unit test for it too."]
REASONING = [
    "If all {a} are {b} and some {b} are {c}, are all {a} {c}? Explain.",
    "I have {n} apples. I give away {m} and buy {k} more. How many apples do I have?",
    "A train leaves at {h}:00 and the trip takes {m} hours. When does it arrive?",
    "Which is heavier, a kilogram of {a} or a kilogram of {b}? Explain your answer.",
    "Tom is older than Ann, and Ann is older than Ben. Who is the youngest? Explain step by step.",
    "What comes next in the sequence {s}? Explain the pattern.",
    "If today is {day}, what day of the week will it be in {n} days?",
]
NOUNS = ["cats", "birds", "teachers", "robots", "apples", "stones", "musicians", "feathers", "doctors", "trees"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MATH = [
    "A shop sells pens for ${p} each. How much do {n} pens cost?",
    "Sara reads {n} pages a day. How many pages does she read in {m} weeks?",
    "A rectangle is {n} cm long and {m} cm wide. What is its area and perimeter?",
    "What is {n} percent of {big}?", "Solve for x: {n}x + {m} = {big}.",
    "A car travels {big} km in {m} hours. What is its average speed?",
    "A class has {n} students and {m} of them are absent. What fraction is present?",
    "What is {big} divided by {n}, rounded to two decimals?",
    "Tickets cost ${p} for adults and ${m} for children. What do {n} adults and {k} children pay?",
    "A recipe needs {m} eggs for {n} people. How many eggs are needed for {big} people?",
]
TARGET_LANGUAGES = ["French", "Spanish", "German", "Italian", "Portuguese"]
SENTENCES = [
    "Where is the nearest train station?", "I would like a cup of tea, please.", "The weather is lovely today.",
    "My brother lives in a small town near the sea.", "Could you help me carry these boxes?",
    "We are going to the museum tomorrow morning.", "This book is more interesting than the film.",
    "Please close the window, it is cold.", "How much does this jacket cost?", "I have been learning to cook.",
]
PASSAGE_TASKS = [
    "Summarize the following text in two sentences.\n\n{p}", "Summarize this passage:\n\n{p}",
    "Read the text below and list its main points.\n\n{p}", "{p}\n\nWhat is the main idea of the text above?",
    "Extract every name, place and number mentioned in this text.\n\n{p}",
    "Using only the document below, answer: what is it mostly about?\n\nDocument: {p}",
    "Rewrite the following text in simpler words.\n\n{p}", "Give this text a title and explain your choice.\n\n{p}",
    "Translate the first sentence of this text into {lang}.\n\n{p}",
    "Continue the following text.\n\n{p}",
]


WORD_TASKS = [
    "Write a short story that involves {w}.", "Explain what {w} means and give an example sentence.",
    "What is the connection between {w} and {v}?", "Write a poem about {w} and {v}.",
    "Give me five interesting facts about {w}.", "Describe {w} to someone who has never heard of it.",
    "Write a dialogue between two friends about {w}.", "What are the pros and cons of {w}?",
    "Write a news headline and a short article about {w}.", "How would you teach a child about {w}?",
    "Write a product review that mentions {w}.", "Plan a one-day trip themed around {w}.",
    "Write an email to a colleague about {w} and {v}.", "List some questions people often ask about {w}, with answers.",
]


def first_stage_prompts(count: int, seed: int, words: list[str] = ()) -> list[str]:
    """`count` varied chat requests, drawn with Random(seed) round-robin over the kinds of request.

    With `words` (say, the whole words of the target's vocabulary), every other request is built around random
    words instead of the fixed topic lists, which makes the requests, and so the answers, far more varied.
    """
    rng = random.Random(seed)
    makers = [_writing, _roleplay, _concept, _concept, _code, _reasoning, _math, _translation]
    prompts = []
    for i in range(count):
        if words and i % 2:
            w, v = rng.sample(words, 2)
            prompts.append(rng.choice(WORD_TASKS).format(w=w, v=v))
        else:
            prompts.append(makers[(i // (2 if words else 1)) % len(makers)](rng))
    return prompts


def vocabulary_words(vocabulary: dict[str, int], min_length: int = 5) -> list[str]:
    """Whole lower-case English-looking words of a byte-level BPE vocabulary ('Ġword' tokens), sorted."""
    return sorted({token[1:] for token in vocabulary if token.startswith("\u0120") and token[1:].isascii()
                   and token[1:].isalpha() and token[1:].islower() and len(token) > min_length})


def passage_prompts(passages: list[str], seed: int) -> list[str]:
    """One request per passage (text the target wrote in the first stage), asking to summarise, extract or answer."""
    rng = random.Random(seed)
    return [rng.choice(PASSAGE_TASKS).format(p=passage.strip(), lang=rng.choice(TARGET_LANGUAGES)) for passage in passages]


def _writing(rng: random.Random) -> str:
    form, topic = rng.choice(FORMS), rng.choice(TOPICS)
    return rng.choice([f"Write a {form} about {topic}.", f"Can you write a {form} about {topic}?",
                       f"Write a {form} about {topic} for a young audience.", f"I need a {form} about {topic}."])


def _roleplay(rng: random.Random) -> str:
    return f"Pretend you are {rng.choice(PERSONAS)}. {rng.choice(REQUESTS)}"


def _concept(rng: random.Random) -> str:
    c, d = rng.sample(CONCEPTS, 2)
    return rng.choice(CONCEPT_TASKS).format(c=c, d=d)


def _code(rng: random.Random) -> str:
    return f"Write a {rng.choice(LANGUAGES)} function that {rng.choice(CODE_TASKS)}.{rng.choice(CODE_EXTRAS)}"


def _reasoning(rng: random.Random) -> str:
    a, b, c = rng.sample(NOUNS, 3)
    start = rng.randint(1, 9)
    step = rng.randint(2, 7)
    sequence = ", ".join(str(start + step * i) for i in range(4))
    return rng.choice(REASONING).format(a=a, b=b, c=c, n=rng.randint(3, 40), m=rng.randint(1, 9), k=rng.randint(1, 9),
                                        h=rng.randint(1, 12), s=sequence, day=rng.choice(DAYS))


def _math(rng: random.Random) -> str:
    return rng.choice(MATH).format(n=rng.randint(2, 30), m=rng.randint(2, 12), k=rng.randint(1, 9), p=rng.randint(1, 20),
                                   big=rng.randint(40, 900))


def _translation(rng: random.Random) -> str:
    return rng.choice(["Translate into {l}: {s}", "How do you say this in {l}? \"{s}\"", "Translate to {l}:\n{s}"]).format(
        l=rng.choice(TARGET_LANGUAGES), s=rng.choice(SENTENCES))
