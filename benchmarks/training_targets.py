"""Measure the spread of an exercise's graded training over seeds, to set its margin.

    python benchmarks/training_targets.py 02-rnns [--profile standard] [--seeds 5]
    python benchmarks/training_targets.py 05-transformers --part test_train_like_the_paper_hidden
    python benchmarks/training_targets.py 05-transformers --study

A graded training part (chapter 1's part 7, chapter 2's parts 7 and 8, chapter 3's part 6, chapter 4's part 7,
chapter 5's parts 6 and 8, chapter 6's parts 7 and 8, chapter 7's part 6) passes when the student's trained
model scores within a margin of the instructor's solution trained the same way. A correct solution written differently
(another order of the calls, a sum divided by the count in place of a mean) follows
another path through the same training, as another seed does, so the margin is set from
the solution's spread over seeds: this script trains with the solution's own code (read
from ``solutions/``) and the hidden test's settings (read from its ``nlpbook.choose``
call) under several seeds, the graded pair of seeds first, and prints each score, their
range, and the time each took (for chapter 3, also the floor a model that ignores its
input reaches). With ``--study`` it runs, instead, the hyperparameter study of the
notebook's written question (its ``study`` function over ``STUDY_CHANGES``), the table
behind that question's mark scheme. With ``--mistake NAME`` it trains, instead of the
solution, one of the planted mistakes (or correct variants) of the chapter's grading test,
``tests/test_grading_<chapter>.py``: the scores the exercise pages quote for them. It
prints figures; it is not a test.

    python benchmarks/training_targets.py 02-rnns --profile quick --seeds 1 --mistake train-ignores-lr
"""
from __future__ import annotations

import argparse
import ast
import importlib
import os
import sys
import time

import nbformat
import torch

from measure import REPO, machine_line

GRADED_SEEDS = (2026, 7)  # the hidden tests': torch.manual_seed for the model, the batches' generator


def train_skipgram(namespace: dict, setting: dict, model_seed: int, window_seed: int) -> dict:
    """Chapter 1: the solution's ``train_skipgram`` with its own ``negative_sampling_gradients`` (the
    hidden test's copy of them), on the hidden test's pairs; one generator, seeded with ``model_seed``,
    draws everything."""
    from nlpbook.corpora import word_corpus
    from nlpbook.vocab import Vocabulary

    documents = word_corpus(setting["corpus"])
    vocab = Vocabulary.build(documents, min_count=setting["min_count"])
    pairs = torch.cat([namespace["skipgram_pairs"](torch.tensor(vocab.encode(document, skip_unknown=True)),
                                                   setting["window"]) for document in documents])  # (N, 2)
    noise = torch.tensor(vocab.counts, dtype=torch.float) ** 0.75
    with torch.no_grad():
        vectors = namespace["train_skipgram"](pairs, noise, len(vocab), setting["dim"], setting["steps"],
                                              setting["batch_size"], setting["negatives"], setting["lr"],
                                              torch.Generator().manual_seed(model_seed),
                                              namespace["negative_sampling_gradients"])
    return {"vectors": vectors}


def train_char_rnn(namespace: dict, setting: dict, model_seed: int, window_seed: int) -> dict:
    """Chapter 2: the solution's ``train_language_model`` trains the course's CharRNN."""
    from nlpbook.charlm import CharRNN, bible_char_data

    data = bible_char_data()
    torch.manual_seed(model_seed)
    model = CharRNN(len(data.chars), setting["embed"], setting["hidden"])
    namespace["train_language_model"](model, data.train_ids, setting["steps"], setting["batch_size"],
                                      setting["length"], setting["lr"], 1.0,
                                      torch.Generator().manual_seed(window_seed))
    return model.state_dict()


def train_own_char_rnn(namespace: dict, setting: dict, model_seed: int, window_seed: int) -> dict:
    """Chapter 2's part 8: the solution's whole model (its RNNLanguageModel on its own rnn_forward and
    rnn_step) trained by its train_carried_state with its clip_grad_norm, the weights under CharRNN's
    names.  The windows are sequential, so only the model's seed varies."""
    from nlpbook.charlm import bible_char_data, char_rnn_state

    data = bible_char_data()
    torch.manual_seed(model_seed)
    model = namespace["RNNLanguageModel"](len(data.chars), setting["embed"], setting["hidden"])
    namespace["train_carried_state"](model, data.train_ids, setting["steps"], setting["batch_size"],
                                     setting["length"], setting["lr"], 1.0)
    return char_rnn_state(model.state_dict())


def bible_windows(setting: dict, window_seed: int):
    """The hidden tests' endless batches of (B, T + 1) windows of the Bible's training characters."""
    from nlpbook.charlm import bible_char_data, random_windows

    generator = torch.Generator().manual_seed(window_seed)
    train_ids = bible_char_data().train_ids
    return iter(lambda: random_windows(train_ids, setting["batch_size"], setting["context"], generator), None)


def course_lm(setting: dict, model_seed: int):
    """The course's DecoderOnlyLM of the hidden test's size, drawn from ``model_seed``."""
    import nlpbook.transformer
    from nlpbook.charlm import bible_char_data

    vocab_size = len(bible_char_data().chars)  # loaded before the seed, as the hidden tests do
    torch.manual_seed(model_seed)
    return nlpbook.transformer.DecoderOnlyLM(vocab_size, setting["width"], setting["heads"], setting["layers"],
                                             setting["context"])


def train_transformer_lm(namespace: dict, setting: dict, model_seed: int, window_seed: int) -> dict:
    """Chapter 5: the solution's ``TransformerLM`` trained by the hidden test's loop, with the
    course's encoder layer in place of the solution's, as the hidden test puts it in place of the student's."""
    import nlpbook.transformer
    from nlpbook.charlm import bible_char_data, next_char_loss

    vocab_size = len(bible_char_data().chars)
    namespace["EncoderLayer"] = nlpbook.transformer.EncoderLayer
    torch.manual_seed(model_seed)
    model = namespace["TransformerLM"](vocab_size, setting["width"], setting["heads"], setting["layers"],
                                       setting["context"])
    windows = bible_windows(setting, window_seed)
    nlpbook.train(model, windows, next_char_loss, torch.optim.Adam(model.parameters(), lr=setting["lr"]),
                  steps=setting["steps"], progress=False)
    return model.state_dict()


def train_like_the_paper(namespace: dict, setting: dict, model_seed: int, window_seed: int) -> dict:
    """Chapter 5's part 8: the solution's ``train_like_the_paper`` trains the course's DecoderOnlyLM, with
    the solution's ``noam_rate`` (the hidden test's reference computes the same rates)."""
    model = course_lm(setting, model_seed)
    namespace["train_like_the_paper"](model, bible_windows(setting, window_seed), setting["steps"], setting["width"],
                                      setting["warmup"], 1.0)
    return model.state_dict()


def train_masked_chars(namespace: dict, setting: dict, model_seed: int, batch_seed: int) -> dict:
    """Chapter 4: the solution's ``MaskedCharModel`` trained by its ``train_masked_model`` to fill in
    hidden characters of Bible verses, as the hidden test does."""
    from nlpbook.masked_chars import MASK, PAD, verse_batches, vocab_size

    namespace.update(MASK=MASK, PAD=PAD)  # from the part's set-up cell, which is neither setup nor a solution
    torch.manual_seed(model_seed)
    model = namespace["MaskedCharModel"](vocab_size(), setting["width"], setting["heads"], setting["layers"])
    generator = torch.Generator().manual_seed(batch_seed)
    namespace["train_masked_model"](model, verse_batches("train", setting["length"], setting["batch_size"], generator),
                                    setting["steps"], setting["lr"], setting["rate"], generator)
    return model.state_dict()


def linear_schedule(step: int, warmup_steps: int, total_steps: int) -> float:
    """transformers.get_linear_schedule_with_warmup's multiplier: chapter 7's hidden test's reference schedule."""
    if step < warmup_steps:
        return step / max(1, warmup_steps)
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


def train_with_adamw(namespace: dict, setting: dict, model_seed: int, window_seed: int) -> dict:
    """Chapter 7: the solution's ``train_with_adamw`` trains the course's DecoderOnlyLM with
    ``torch.optim.AdamW`` and the reference schedule, as the hidden test does (with
    ``--solution-optimizer``, with the solution's own ``AdamW`` and ``warmup_linear_decay``)."""
    from nlpbook.charlm import next_char_loss

    model = course_lm(setting, model_seed)
    optimizer, schedule = ((namespace["AdamW"], namespace["warmup_linear_decay"]) if SOLUTION_OPTIMIZER
                           else (torch.optim.AdamW, linear_schedule))
    namespace["train_with_adamw"](model, bible_windows(setting, window_seed), next_char_loss, setting["steps"],
                                  setting["lr"], setting["weight_decay"], setting["warmup_steps"], setting["max_norm"],
                                  optimizer, schedule)
    return model.state_dict()


SOLUTION_OPTIMIZER = False  # --solution-optimizer: chapter 7 with the solution's AdamW and schedule


_review_features: dict = {}  # the reviews' sentence vectors, computed once: the encoder is frozen


def train_sentiment_head(namespace: dict, setting: dict, model_seed: int, batch_seed: int) -> dict:
    """Chapter 6: the solution's ``SentimentClassifier`` on all-MiniLM-L6-v2, its head trained by the
    solution's ``train_head`` on the vectors of the reviews, sorted by length, as the hidden test does."""
    from nlpbook import corpora
    from nlpbook.bert import load_minilm

    bert, tokenizer = load_minilm()  # before the seed: building a BertModel draws its initial weights
    torch.manual_seed(model_seed)
    model = namespace["SentimentClassifier"](bert)
    reviews = sorted(corpora.rotten_tomatoes("train")[:setting["reviews"]], key=lambda review: len(review.text))
    if setting["reviews"] not in _review_features:
        batches = (tokenizer.batch([review.text for review in reviews[start:start + 64]])
                   for start in range(0, len(reviews), 64))
        _review_features[setting["reviews"]] = torch.cat([model.features(batch["input_ids"], batch["attention_mask"])
                                                          for batch in batches])  # (N, D)
    labels = torch.tensor([review.fresh for review in reviews])  # (N,)
    namespace["train_head"](model, _review_features[setting["reviews"]], labels, setting["steps"],
                            setting["batch_size"], setting["lr"], torch.Generator().manual_seed(batch_seed))
    return model.classifier.state_dict()


def fine_tune_top_layers(namespace: dict, setting: dict, model_seed: int, batch_seed: int) -> dict:
    """Chapter 6's part 8: the solution's ``fine_tune`` trains all-MiniLM-L6-v2's top layers and a
    classifier (``nlpbook.bert.SentenceClassifier``) on the reviews, as the hidden test does; returns
    the weights that trained, the ones the grader receives."""
    from nlpbook import bert, corpora

    encoder, tokenizer = bert.load_minilm()  # before the seed, as in the hidden test
    torch.manual_seed(model_seed)
    model = bert.SentenceClassifier(encoder)
    trained = bert.train_top_layers(model, setting["layers"])
    batches = bert.review_batches(corpora.rotten_tomatoes("train")[:setting["reviews"]], tokenizer,
                                  setting["batch_size"], torch.Generator().manual_seed(batch_seed))
    namespace["fine_tune"](model, batches, setting["steps"], setting["encoder_lr"], setting["head_lr"],
                           setting["warmup"])
    state = model.state_dict()
    return {name: state[name] for name in trained}


def train_translator(namespace: dict, setting: dict, model_seed: int, batch_seed: int) -> dict:
    """Chapter 3: the solution's ``Translator`` trained by its ``train_translator`` on the Bible's
    verse pairs, as the hidden test does."""
    from nlpbook.parallel import bible_tensors

    data = bible_tensors(setting["max_words"])
    torch.manual_seed(model_seed)
    model = namespace["Translator"](len(data.source_vocab), len(data.target_vocab), setting["embed"],
                                    setting["hidden"])
    namespace["train_translator"](model, data.train, setting["steps"], setting["batch_size"], setting["lr"],
                                  torch.Generator().manual_seed(batch_seed))
    return model.state_dict()


def piece_frequencies(setting: dict) -> tuple[str, float]:
    """Chapter 3's floor: the perplexity of the training targets' piece frequencies on the
    validation targets (EOS included), what a translator that ignored its source and its prefix
    would reach."""
    import math

    from nlpbook.parallel import bible_tensors

    data = bible_tensors(setting["max_words"])
    counts = torch.bincount(data.train[2][:, 1:].flatten(), minlength=len(data.target_vocab))[1:].double()
    counts[counts == 0] = 0.5  # a piece never seen in training still gets some probability
    log_probs = (counts / counts.sum()).log()  # over the pieces other than padding (id 0)
    valid = data.valid[2][:, 1:].flatten()
    return "the pieces' frequencies", math.exp(-log_probs[valid[valid != 0] - 1].mean().item())


BASELINES = {"03-lstms": piece_frequencies}


# chapter -> (solution notebook, {the hidden test's grade id: how the solution trains}), the first part the default
PARTS = {
    "01-word-vectors": ("word_vectors.ipynb", {"test_train_skipgram_hidden": train_skipgram}),
    "02-rnns": ("rnns.ipynb", {"test_train_language_model_hidden": train_char_rnn,
                               "test_your_model_trained_hidden": train_own_char_rnn}),
    "03-lstms": ("lstms.ipynb", {"test_translator_training_hidden": train_translator}),
    "04-attention": ("attention.ipynb", {"test_masked_char_training_hidden": train_masked_chars}),
    "05-transformers": ("transformers.ipynb", {"test_transformer_lm_training_hidden": train_transformer_lm,
                                               "test_train_like_the_paper_hidden": train_like_the_paper}),
    "06-bert": ("bert.ipynb", {"test_sentiment_classifier_training_hidden": train_sentiment_head,
                               "test_fine_tune_hidden": fine_tune_top_layers}),
    "07-adam": ("adam.ipynb", {"test_train_with_adamw_hidden": train_with_adamw}),
}


def solution_namespace(notebook, edits: dict[str, list[tuple[str, str]]] | None = None) -> dict:
    """The setup and solution cells of ``notebook`` run in one namespace (no tests, no demos), each
    solution cell with its ``edits`` (old, new) applied as the grading tests apply them."""
    namespace: dict = {}
    edits = dict(edits or {})
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and (meta.get("grade_id") == "setup" or meta.get("solution")):
            source = cell.source
            for old, new in edits.pop(meta["grade_id"], []):
                if old not in source:
                    raise SystemExit(f"the edit of {meta['grade_id']} does not apply: {old!r} not found")
                source = source.replace(old, new)
            exec(compile(source, f"<{meta['grade_id']}>", "exec"), namespace)
    if edits:
        raise SystemExit(f"edits for cells the solution does not have: {sorted(edits)}")
    return namespace


def planted(chapter: str, name: str) -> dict[str, list[tuple[str, str]]]:
    """The edits of the mistake (or correct variant) ``name`` that the chapter's grading test plants."""
    sys.path.insert(0, str(REPO / "tests"))
    module = importlib.import_module("test_grading_" + chapter.replace("-", "_"))
    tested = next(value for value in vars(module).values()
                  if isinstance(value, type) and value.__module__ == module.__name__ and hasattr(value, "MISTAKES"))
    if name in tested.MISTAKES:
        return tested.MISTAKES[name][2]  # (the part, its expected score, the edits)
    if name in getattr(tested, "VARIANTS", {}):
        return tested.VARIANTS[name]
    raise SystemExit(f"tests/{module.__name__}.py plants no {name!r}; its mistakes and variants: "
                     f"{', '.join(sorted([*tested.MISTAKES, *getattr(tested, 'VARIANTS', {})]))}")


def cell(notebook, grade_id: str):
    """The cell of ``notebook`` whose nbgrader grade id is ``grade_id``; SystemExit naming it if none."""
    found = next((c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id), None)
    if found is None:
        raise SystemExit(f"the solution notebook has no cell {grade_id!r}")
    return found


def hidden_setting(notebook, grade_id: str, namespace: dict) -> tuple[dict, str, dict]:
    """What the test cell ``grade_id`` trains and scores with, under the current ``NLPBOOK_PROFILE``:
    the value of its ``_setting = nlpbook.choose(...)``, and the scorer and the options of its
    ``expect_score`` call."""
    nodes = list(ast.walk(ast.parse(cell(notebook, grade_id).source)))
    value = lambda node: eval(compile(ast.Expression(node), grade_id, "eval"), namespace)  # noqa: E731
    setting = next((value(node.value) for node in nodes if isinstance(node, ast.Assign)
                    and any(getattr(target, "id", None) == "_setting" for target in node.targets)), None)
    call = next((node for node in nodes if isinstance(node, ast.Call)
                 and getattr(node.func, "id", None) == "expect_score"), None)
    if setting is None or call is None:
        raise ValueError(f"{grade_id} has no _setting assignment or no expect_score call")
    namespace["_setting"] = setting
    options = next(value(keyword.value) for keyword in call.keywords if keyword.arg == "options")
    return setting, value(call.args[1]), options


def run_study(notebook, namespace: dict, profile: str) -> None:
    """The notebook's ``hyperparameter_study`` cell (without its own demonstration run), then
    ``study()`` and each of ``STUDY_CHANGES``: one line per run."""
    source = cell(notebook, "hyperparameter_study").source.replace("print(study())", "")
    exec(compile(source, "<hyperparameter_study>", "exec"), namespace)
    print(f"hyperparameter study, profile {profile}: {namespace['STUDY_BASE']}")
    for change in [{}] + namespace["STUDY_CHANGES"]:
        print(" ", namespace["study"](**change), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapter", choices=sorted(PARTS))
    parser.add_argument("--profile", default=os.environ.get("NLPBOOK_PROFILE", "standard"))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--part", help="the hidden test's grade id, where a chapter trains in more than one part "
                                       "(the first by default)")
    parser.add_argument("--study", action="store_true", help="run the notebook's hyperparameter study instead")
    parser.add_argument("--solution-optimizer", action="store_true",
                        help="07-adam: train with the solution's AdamW and schedule instead of PyTorch's and the reference")
    parser.add_argument("--mistake", metavar="NAME",
                        help="train this planted mistake or correct variant of the chapter's grading test instead")
    args = parser.parse_args()
    global SOLUTION_OPTIMIZER
    SOLUTION_OPTIMIZER = args.solution_optimizer
    os.environ["NLPBOOK_PROFILE"] = args.profile

    from nlpbook.checks import score_state

    name, trainers = PARTS[args.chapter]
    grade_id = args.part or next(iter(trainers))
    if grade_id not in trainers:
        parser.error(f"{args.chapter} trains in {', '.join(trainers)}, not in {grade_id}")
    train = trainers[grade_id]
    notebook = nbformat.read(REPO / "solutions" / args.chapter / name, as_version=4)
    namespace = solution_namespace(notebook, planted(args.chapter, args.mistake) if args.mistake else None)
    print(machine_line())
    if args.study:
        run_study(notebook, namespace, args.profile)
        return
    setting, scorer, options = hidden_setting(notebook, grade_id, namespace)
    print(f"{args.chapter}, {grade_id}, profile {args.profile}{', mistake ' + args.mistake if args.mistake else ''}: "
          f"{setting}; {scorer} {options}")
    seeds = [GRADED_SEEDS] + [(seed, seed) for seed in range(args.seeds - 1)]
    scores = []
    for model_seed, window_seed in seeds:
        start = time.perf_counter()
        state = train(namespace, setting, model_seed, window_seed)
        seconds = time.perf_counter() - start
        score = score_state(scorer, state, options)
        scores.append(score)
        print(f"  seeds {model_seed}/{window_seed}: {scorer} {score:.4f}, trained in {seconds:.1f} s", flush=True)
    print(f"range {min(scores):.4f} to {max(scores):.4f} (width {max(scores) - min(scores):.4f}); "
          f"graded seeds {scores[0]:.4f}; margin in use {setting['margin']}")
    if args.chapter in BASELINES:
        name, score = BASELINES[args.chapter](setting)
        print(f"baseline, {name}: {scorer} {score:.4f}")


if __name__ == "__main__":
    main()
