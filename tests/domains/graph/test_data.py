"""Graph data: Planetoid from a read-only data folder, KarateClub's split, full and sampled loading."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import pytest
import torch

from domains.graph import KarateClubData, NodeClassifier, PlanetoidData
from framework.data import DataNotFoundError


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``folder``: size and modification time."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def test_cora_public_split_read_without_writing_into_the_data_folder(shared_data):
    folder = shared_data("Planetoid")
    before = snapshot(folder)
    data = PlanetoidData(name="cora")
    data.prepare_data()
    data.setup("fit")
    assert snapshot(folder) == before  # processed/ went to the cache, nothing else was written
    processed = Path(data.dataset().processed_dir)
    assert (processed / "data.pt").is_file() and Path(os.environ["FRAMEWORK_CACHE_DIR"]) in processed.parents

    graph = data.graph
    assert (graph.num_nodes, graph.num_features, int(graph.y.max()) + 1, graph.num_edges) == (2708, 1433, 7, 10556)
    sizes = {split: int(data.split(split)[0].target_mask.sum()) for split in ("train", "val", "test")}
    assert sizes == {"train": 140, "val": 500, "test": 1000}
    assert torch.equal(data.split("val")[0].target_mask, graph.val_mask)
    torch.testing.assert_close(graph.x.sum(1), torch.ones(2708))  # row-normalised features


def copy_of_cora(planetoid: Path, root: Path) -> str:
    """A writable copy of Cora's raw files as ``root/Cora/raw``; returns ``root``, a ``data.root``."""
    raw = shutil.copytree(planetoid / "Cora" / "raw", root / "Cora" / "raw")
    for path in raw.iterdir():
        path.chmod(0o644)  # the shared copies are read-only
    return str(root)


def test_changed_raw_files_are_processed_anew(shared_data, tmp_path):
    root = copy_of_cora(shared_data("Planetoid"), tmp_path)
    before = PlanetoidData(root=root).dataset()
    index = tmp_path / "Cora" / "raw" / "ind.cora.test.index"
    first, second, *rest = index.read_text().splitlines()
    index.write_text("\n".join([second, first, *rest]) + "\n")  # two test nodes swap their features
    after = PlanetoidData(root=root).dataset()
    assert after.processed_dir != before.processed_dir
    changed = (after[0].x != before[0].x).any(1).nonzero().flatten().tolist()
    assert changed == sorted([int(first), int(second)])


def test_a_truncated_processed_file_is_remade_with_one_warning_naming_it(shared_data):
    shared_data("Planetoid")
    before = PlanetoidData().dataset()
    data_file = Path(before.processed_dir) / "data.pt"
    data_file.write_bytes(data_file.read_bytes()[: data_file.stat().st_size // 2])
    with pytest.warns(UserWarning) as record:
        after = PlanetoidData().dataset()
    (warning,) = [str(w.message) for w in record if "could not be read" in str(w.message)]
    assert f"cache file {data_file} could not be read" in warning
    assert torch.equal(after[0].x, before[0].x) and torch.equal(after[0].edge_index, before[0].edge_index)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PlanetoidData().dataset()  # remade for good: no second warning


def test_the_same_raw_files_in_two_folders_share_one_cache_entry(shared_data, tmp_path):
    planetoid = shared_data("Planetoid")
    first = PlanetoidData(root=copy_of_cora(planetoid, tmp_path / "a")).dataset()
    data_file = Path(first.processed_dir) / "data.pt"
    made = data_file.stat().st_mtime_ns
    second = PlanetoidData(root=copy_of_cora(planetoid, tmp_path / "b")).dataset()
    assert second.processed_dir == first.processed_dir == PlanetoidData().dataset().processed_dir
    assert data_file.stat().st_mtime_ns == made  # read, not processed again
    assert len(list(Path(first.processed_dir).parents[1].glob("Cora-*"))) == 1


def test_missing_citeseer_says_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEWORK_DATA_DIR", str(tmp_path))
    (tmp_path / "Planetoid").mkdir()
    with pytest.raises(DataNotFoundError) as error:
        PlanetoidData(name="CiteSeer").prepare_data()
    message = str(error.value)
    assert str((tmp_path / "Planetoid").resolve()) in message and "FRAMEWORK_DATA_DIR" in message
    assert "CiteSeer/raw/ind.citeseer.x" in message and "github.com/kimiyoung/planetoid" in message
    assert "data.download=true" in message


def test_unknown_planetoid_name_is_an_error_naming_the_key():
    with pytest.raises(ValueError, match="data.name must be one of Cora, CiteSeer, PubMed, got 'Cora2'"):
        PlanetoidData(name="Cora2")


def test_karate_split_is_deterministic_stratified_and_disjoint():
    data = KarateClubData()
    data.setup("fit")
    graph = data.graph
    masks = torch.stack([graph.train_mask, graph.val_mask, graph.test_mask])
    assert torch.equal(masks.sum(0), torch.ones(34, dtype=torch.long))  # every node in exactly one split
    assert torch.equal(torch.bincount(graph.y[graph.train_mask]), torch.full((4,), 2))
    assert masks.sum(1).tolist() == [8, 12, 14]

    again, other = KarateClubData(), KarateClubData(seed=1)
    again.setup("fit"), other.setup("fit")
    assert torch.equal(again.graph.val_mask, graph.val_mask) and not torch.equal(other.graph.val_mask, graph.val_mask)


def test_bad_data_values_name_the_key():
    with pytest.raises(ValueError, match="data.train_per_class=4 leaves no validation or test node in class 2"):
        KarateClubData(train_per_class=4).setup("fit")
    with pytest.raises(ValueError, match=r"data.num_neighbors must list a count per hop \(-1: all\), got \[\]"):
        KarateClubData(num_neighbors=[])


def test_full_batch_is_the_whole_graph_once_per_epoch():
    data = KarateClubData()
    data.setup("fit")
    (batch,) = list(data.train_dataloader())
    assert batch.num_nodes == 34 and torch.equal(batch.target_mask, data.graph.train_mask)


def test_neighbor_loader_gives_working_batches_of_seed_nodes(shared_data):
    shared_data("Planetoid")
    data = PlanetoidData(sampling="neighbor", num_neighbors=[5, 3], batch_size=32)
    data.setup("fit")
    batches = list(data.train_dataloader())
    assert len(batches) == 5  # 140 training nodes in batches of 32
    batch = batches[0]
    assert int(batch.target_mask.sum()) == batch.batch_size == 32 and batch.target_mask[:32].all()
    assert data.graph.train_mask[batch.n_id[:32]].all()  # the seeds are training nodes
    assert batch.num_nodes <= 32 * (1 + 5 + 5 * 3)
    seen = torch.cat([b.n_id[: b.batch_size] for b in batches])
    assert torch.equal(seen.sort().values, data.graph.train_mask.nonzero().flatten())

    model = NodeClassifier(1433, 7)
    logits = model(batch.x, batch.edge_index)[batch.target_mask]
    loss = torch.nn.functional.cross_entropy(logits, batch.y[batch.target_mask])
    loss.backward()
    assert logits.shape == (32, 7) and torch.isfinite(loss)
    assert all(p.grad is not None for p in model.parameters())
