"""Graph data modules: KarateClub (embedded default) and the Planetoid citation graphs."""

from .base import NodeClassificationData
from .karate import KarateClubData
from .planetoid import PlanetoidData
from .sampling import TorchNeighborSampler, neighbor_sampler

__all__ = ["KarateClubData", "NodeClassificationData", "PlanetoidData", "TorchNeighborSampler", "neighbor_sampler"]
