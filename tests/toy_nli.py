"""Six hand-written NLI triplets and an STS dev set over their (anchor, positive) pairs: the toy data the attention
pooling trainers' tests (fine-tuning and frozen arms) train and select checkpoints on."""
import numpy as np

from bertsent.data.nli import Triplets
from bertsent.data.sts import SentencePairs, STSDataset

TRIPLETS = Triplets(
    ["A man plays a guitar.", "Two dogs run on a beach.", "A woman is cooking dinner.", "Kids play football.",
     "A plane takes off.", "The cat sleeps on the sofa."],
    ["A person plays music.", "Dogs are outside.", "Someone prepares food.", "Children play a sport.",
     "An aircraft leaves.", "An animal rests."],
    ["Nobody is playing.", "The dogs sleep inside.", "The woman is asleep.", "The kids are in class.",
     "The plane is parked.", "The cat is running."])
DEV = STSDataset("stsb", "dev", {"dev": SentencePairs(TRIPLETS.anchors, TRIPLETS.positives,
                                                        np.array([4.5, 3.0, 4.0, 2.0, 1.0, 0.5]))})
