"""MovieLens 100K as a heterogeneous graph of users, movies, genres and occupations, whose users'
age brackets are classified from meta-paths (read from a local folder, nothing downloaded)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import torch
from torch_geometric.data import HeteroData

from framework.data import dataset_dir, reading
from framework.errors import ConfigError

from .hetero import HeteroNodeClassificationData
from .karate import stratified_masks

SOURCE = "https://grouplens.org/datasets/movielens/100k/ (ml-100k.zip, unzipped into raw/)"
FILES = ("raw/u.data", "raw/u.user", "raw/u.item", "raw/u.occupation")


def read_rows(path: Path, separator: str, columns: int, what: str) -> list[list[str]]:
    """The non-empty lines of a MovieLens file split into at least ``columns`` fields (latin-1)."""
    with reading(path, what):
        rows = [line.split(separator) for line in path.read_text(encoding="latin-1").splitlines() if line.strip()]
        short = next((i for i, row in enumerate(rows) if len(row) < columns), None)
        if short is not None:
            raise ValueError(f"line {short + 1} has {len(rows[short])} fields, expected {columns}")
    return rows


class MovieLensUsers(HeteroNodeClassificationData):
    """The users of MovieLens 100K (943), labelled by age bracket, in a graph with the movies they
    rated (1682), the movies' genres (19) and the users' occupations (21).

    Labels: the bracket of a user's age among ``age_brackets`` (default: under 25, 25-34,
    35-49, 50 and over: 234, 310, 274 and 125 users). Features of a user: gender (2) and
    occupation (21) one-hot, and the share of the user's ratings that went to each genre (19),
    42 in all; movies, genres and occupations have one constant feature. None of them and none
    of the meta-paths holds the age. Meta-paths: ``UMU`` (users who rated a common movie),
    ``UOU`` (the same occupation), ``UMGMU`` (users who rated movies of a common genre); every
    ``neighbours`` strongest ones are kept per user (most common movies or genre ratings; UOU
    ties broken at random). The split is per bracket: ``train_per_class`` training users, half
    of the rest (rounded down) validating, the others testing (240 / 351 / 352 users with the
    defaults). Sizes: ``num_classes`` (brackets) and, once set up, ``in_channels`` (42).

    Reads ``$FRAMEWORK_DATA_DIR/MovieLens100K/raw/{u.data,u.user,u.item,u.occupation}``
    (or ``<data.root>/raw``), the layout of ``torch_geometric.datasets.MovieLens100K``.

    Args:
        root: the MovieLens100K folder (holding ``raw/``), instead of ``$FRAMEWORK_DATA_DIR/MovieLens100K``.
        age_brackets: the ages at which a bracket starts, after the first one (increasing).
        train_per_class: labelled training users per bracket.
        **kwargs: options of :class:`HeteroNodeClassificationData` (``metapaths``, ``neighbours``, ``seed``).
    """

    METAPATHS = {
        "UMU": [("user", "rates", "movie"), ("movie", "rated_by", "user")],
        "UOU": [("user", "works_as", "occupation"), ("occupation", "employs", "user")],
        "UMGMU": [("user", "rates", "movie"), ("movie", "belongs_to", "genre"), ("genre", "includes", "movie"),
                  ("movie", "rated_by", "user")],
    }
    target = "user"

    def __init__(self, root: Optional[str] = None, age_brackets: Sequence[int] = (25, 35, 50), train_per_class: int = 60,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        age_brackets = list(age_brackets)
        if not age_brackets or any(b >= a for b, a in zip(age_brackets, age_brackets[1:])):
            raise ConfigError(f"data.age_brackets must be increasing ages, got {age_brackets}")
        if train_per_class < 1:
            raise ConfigError(f"data.train_per_class must be at least 1, got {train_per_class}")
        self.root, self.age_brackets, self.train_per_class = root, age_brackets, train_per_class
        self.num_classes = len(age_brackets) + 1

    def load_graph(self) -> HeteroData:
        folder = dataset_dir("MovieLens100K", root=self.root, source=SOURCE, expect=FILES)
        users = read_rows(folder / "raw/u.user", "|", 5, "MovieLens users")
        ratings = read_rows(folder / "raw/u.data", "\t", 3, "MovieLens ratings")
        movies = read_rows(folder / "raw/u.item", "|", 24, "MovieLens movies")
        occupations = [row[0] for row in read_rows(folder / "raw/u.occupation", "|", 1, "MovieLens occupations")]
        with reading(folder / "raw/u.user", "MovieLens users"):
            ages = torch.tensor([int(row[1]) for row in users])
            occupation = torch.tensor([occupations.index(row[3]) for row in users])
            female = torch.tensor([row[2] == "F" for row in users])
        with reading(folder / "raw/u.data", "MovieLens ratings"):
            rates = torch.tensor([[int(row[0]) - 1, int(row[1]) - 1] for row in ratings]).T.contiguous()  # ids start at 1
        with reading(folder / "raw/u.item", "MovieLens movies"):
            genres = torch.tensor([[int(flag) for flag in row[5:24]] for row in movies])  # (movies, 19)
        labels = torch.bucketize(ages, torch.tensor(self.age_brackets), right=True)

        per_user = torch.zeros(len(users), genres.shape[1]).index_add_(0, rates[0], genres[rates[1]].float())
        profile = per_user / per_user.sum(1, keepdim=True).clamp(min=1)
        features = torch.cat([torch.nn.functional.one_hot(female.long(), 2),
                              torch.nn.functional.one_hot(occupation, len(occupations)), profile], 1).float()
        graph = HeteroData()
        graph["user"].x, graph["user"].y = features, labels
        graph["user"].train_mask, graph["user"].val_mask, graph["user"].test_mask = stratified_masks(
            labels, self.train_per_class, self.seed)
        for node_type, count in (("movie", len(movies)), ("genre", genres.shape[1]), ("occupation", len(occupations))):
            graph[node_type].x = torch.ones(count, 1)
        works = torch.stack([torch.arange(len(users)), occupation])
        belongs = genres.nonzero().T.contiguous()  # (movie, genre)
        for (source, relation, target), edges in ((("user", "rates", "movie"), rates),
                                                 (("user", "works_as", "occupation"), works),
                                                 (("movie", "belongs_to", "genre"), belongs)):
            graph[source, relation, target].edge_index = edges
        graph["movie", "rated_by", "user"].edge_index = rates.flip(0)
        graph["occupation", "employs", "user"].edge_index = works.flip(0)
        graph["genre", "includes", "movie"].edge_index = belongs.flip(0)
        return graph
