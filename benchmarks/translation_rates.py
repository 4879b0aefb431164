"""The learning-rate sweep behind ``nlpbook.translation.RACE_RATES``: chapter 5's translation race.

    python benchmarks/translation_rates.py                                  # both models, the default rates
    python benchmarks/translation_rates.py --model Transformer --rates 2e-3 5e-3 --seconds 70

Each model of ``book/05-transformers/translation.md`` (the LSTM with attention and the Transformer,
at the page's standard sizes) trains for 70 seconds at each rate, one seed (the race's length on the
afternoon of the sweep; the page now sets its budget by the Transformer's steps, 52 to 70 seconds on
2 cores), and prints its steps, its validation loss (per French piece, every validation verse) and its greedy
BLEU on the validation verses.  The rate kept for the race is the one with the highest validation
BLEU, the race's measure (the validation loss can prefer another rate; of equal scores, the first
rate tried); the test verses are not read.  The page cannot afford the sweep inside its ten minutes, so
the rates it races at are kept in ``RACE_RATES`` with the date of the sweep.  Run it alone: the
budget is seconds, so a machine shared with another job gives every rate fewer steps.  It prints
figures; it is not a test.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nlpbook.parallel import bible_translation, build_vocabularies, pieces_to_words, to_tensors  # noqa: E402
from nlpbook.translation import (RACE_MODELS, RACE_OPTIONS, greedy_translate, race_model,  # noqa: E402
                                 train_translator, validation_loss)
from nlpbook.translation_metrics import bleu  # noqa: E402

DEFAULT_RATES = {"LSTM + attention": [2e-3, 5e-3, 1e-2, 2e-2, 4e-2], "Transformer": [1e-3, 2e-3, 5e-3, 1e-2]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=RACE_MODELS, action="append",
                        help="a model to sweep (repeat for both; default both)")
    parser.add_argument("--rates", type=float, nargs="+", help="the rates to try (default: DEFAULT_RATES)")
    parser.add_argument("--seconds", type=float, default=70.0, help="training seconds a rate (70 in the sweep of RACE_RATES)")
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--valid-verses", type=int, help="score on the first N validation verses (default all)")
    args = parser.parse_args()
    torch.set_num_threads(min(2, torch.get_num_threads()))  # the book's 2 cores
    corpus = bible_translation("web", "segond", max_words=20, merges=2000)
    vocabs = build_vocabularies(corpus.pieces.train)
    train, valid = (to_tensors(pairs, *vocabs) for pairs in (corpus.pieces.train, corpus.pieces.valid))
    sizes = len(vocabs[0]), len(vocabs[1])
    valid_pieces = corpus.pieces.valid[: args.valid_verses]
    valid_words = corpus.words.valid[: len(valid_pieces)]
    print(f"{len(corpus.pieces.train):,} training pairs, {len(valid_pieces):,} validation verses, "
          f"{args.seconds:.0f} s a rate on {torch.get_num_threads()} threads, seed {args.seed}")
    print(f"{'model':<18} {'rate':>8} {'steps':>6} {'valid loss':>10} {'valid BLEU':>10}")
    for kind in args.model or RACE_MODELS:
        results = []
        for rate in args.rates or DEFAULT_RATES[kind]:
            torch.manual_seed(args.seed)
            model = race_model(kind, sizes, args.width)  # the page's standard width: 128
            # the race's settings apart from the rate (betas, warm-up)
            run = train_translator(model, train, seed=args.seed, seconds=args.seconds, lr=rate,
                                   **RACE_OPTIONS[kind])
            loss = validation_loss(model, valid)
            outputs = greedy_translate(model, valid_pieces, *vocabs)
            score = bleu([pieces_to_words(list(o)) for o in outputs], valid_words)[0]
            results.append((score, rate))
            print(f"{kind:<18} {rate:>8.0e} {len(run.loss):>6} {loss:>10.3f} {score:>10.2f}", flush=True)
        best = max(results, key=lambda result: result[0])  # the first of equal scores
        print(f"{kind}: highest validation BLEU at rate {best[1]:.0e}")


if __name__ == "__main__":
    main()
