"""One-off research scripts behind the figures in docs/ (what moves a reading, and by how much);
not part of nsightwrap. Each runs from the repository root as ``python -m studies.<name>``; their
recorded results are in studies/results/ and studies/README.md tells what each found."""
