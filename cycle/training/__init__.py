"""The dynamic loop: data collected in round k trains the target of round k+1, inside the platform.

It reads every layer below (annotation's settled examples, the registry's models, leaderboards'
datasets and scores), so it lives in ``cycle``, the app above ``leaderboards`` (docs/architecture.md,
"Training the next target"). One module per concern, each importing only the ones listed before it:

* ``planning``: check a request (recipe, model name, rounds) before anything is read or trained;
* ``examples``: the settled examples a target trains and is measured on, by split;
* ``placement``: train into a work folder, swap it into place, register it, make it a round's target;
* ``classifier`` and ``span``: train and measure a classifier or a span (QA) model;
* ``targets``: ``train_target_for_rounds``, which picks one of the two;
* ``requests``: record and queue a ``TrainingJob`` (run by ``cycle.jobs.run_training_job``);
* ``owner_facts``: what the training form and the start-round pages show (candidates' scores, data by round);
* ``replay``: feed a dataset's real examples through the create service, to measure a round's targets.
"""
