"""The lab: everything that studies dphist rather than publishes with it.

* :mod:`~dphist.lab.experiments` - seeded, resumable grids of methods x datasets x
  epsilons x trials, scored by named metrics;
* :mod:`~dphist.lab.reproduce` - the paper reproductions, each writing a report;
* :mod:`~dphist.lab.audit` - the statistical privacy audit (a testing tool);
* :mod:`~dphist.lab.bench` - the timing code shared by ``dphist bench`` and the
  benchmarks.

The product core (kernel, blocks, methods, publishing, ingest, export, plots, the
command line) never imports the lab; the command line reaches it lazily, only for
``dphist bench`` and ``dphist reproduce``.
"""
