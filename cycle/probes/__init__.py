"""Artefact probes of a closed round (docs/datasets.md, "Artefact probes").

Two questions asked of a round's settled validated-correct examples, each answered by a bag-of-words
logistic regression under stratified k-fold cross-validation and compared with chance (the majority
class's share): can the label be predicted from what the annotator wrote alone, without the context
(the input-only baseline: for NLI the hypothesis-only classifier of Poliak et al. 2018 and Gururangan et
al. 2018), and can the author be predicted from the text (the annotator-identity probe of Geva, Goldberg
and Berant 2019)? An accuracy well above chance says the data carries artefacts a model can learn
instead of the task. ``measure`` holds the classifiers (scikit-learn, no database), ``data`` reads a
round's texts, ``services`` runs and stores the probes, ``jobs`` is the django-q2 job queued when a round
stops collecting (``handlers``), ``selectors`` reads the stored results for the round page, the API and
the release card.
"""
