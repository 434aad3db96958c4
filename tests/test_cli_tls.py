"""A tls:// scheduler (docs/guide/scaling.md, "Securing a cluster"): the CLI's scheduler probe
presents the client certificate of dask's configuration, as distributed.Client does."""
from __future__ import annotations

import dask
import pytest
from distributed import Client, LocalCluster
from distributed.security import Security

from tabprep.cli import cluster as cli_cluster
from tabprep.cli.runtime import JobFailed


@pytest.fixture(scope="module")
def tls_cluster():
    pytest.importorskip("cryptography")  # a dependency of moto (dev extra), which makes the certificates
    sec = Security.temporary()
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls", security=sec,
                      dashboard_address=None) as cluster:
        yield cluster, sec


def test_probe_of_a_tls_scheduler_uses_the_configured_certificates(tls_cluster) -> None:
    cluster, sec = tls_cluster
    assert cluster.scheduler_address.startswith("tls://")
    config = {"distributed.comm.tls.ca-file": sec.tls_ca_file,
              "distributed.comm.tls.client.cert": sec.tls_client_cert,
              "distributed.comm.tls.client.key": sec.tls_client_key,
              "distributed.comm.require-encryption": True}
    with dask.config.set(config):
        cli_cluster._probe(cluster.scheduler_address, "at " + cluster.scheduler_address, 20)
        with Client(cluster.scheduler_address, timeout="20s") as client:  # what the job then connects with
            assert client.submit(lambda x: x + 1, 1).result() == 2


def test_probe_without_certificates_fails_with_a_message(tls_cluster) -> None:
    cluster, _ = tls_cluster
    with pytest.raises(JobFailed, match="dask scheduler"):
        cli_cluster._probe(cluster.scheduler_address, "at " + cluster.scheduler_address, 10)
