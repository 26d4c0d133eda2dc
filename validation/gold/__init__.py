"""Gold items: examples with a known verdict served among the queue to measure each validator's accuracy
(``services``: serving, recording and checking answers; ``selectors``: claims, queues and accuracy;
``api`` and ``serializers``: ``/api/tasks/<slug>/gold/``). docs/crowd.md, "Gold items"."""
