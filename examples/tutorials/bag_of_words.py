"""Two small NLP programs in the style of PyTorch's "Deep Learning for NLP": a bag-of-words classifier that tells
which of two topics a sentence is about (word counts -> nn.Linear -> log_softmax, nn.NLLLoss on a torch.LongTensor
target), then a trigram model that predicts a word from the two before it (nn.Embedding, .view((1, -1)), a ReLU
layer). The starting weights come from NumPy, so both libraries start alike.

Runs unchanged under `import minitorch as torch`; with `import torch` it prints the same losses.
"""
import numpy as np

import minitorch as torch
from minitorch import nn
import minitorch.nn.functional as F

rng = np.random.default_rng(3)


def set_weights(model, scale):
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.from_numpy(rng.uniform(-scale, scale, tuple(param.shape)).astype(np.float32)))


# ----- bag of words: which topic, cooking or sailing -----
sentences = [("stir the soup and add salt".split(), "cooking"),
             ("the boat left the harbour at dawn".split(), "sailing"),
             ("bake the bread until golden".split(), "cooking"), ("raise the sail and steer west".split(), "sailing"),
             ("chop onions for the soup".split(), "cooking"), ("the wind filled the sail".split(), "sailing")]
word_to_ix = {}
for words, _ in sentences:
    for word in words:
        word_to_ix.setdefault(word, len(word_to_ix))
label_to_ix = {"cooking": 0, "sailing": 1}


class BagOfWords(nn.Module):
    def __init__(self, vocab_size, num_labels):
        super().__init__()
        self.linear = nn.Linear(vocab_size, num_labels)

    def forward(self, counts):
        return F.log_softmax(self.linear(counts), dim=1)


def counts_of(words):
    vec = torch.zeros(len(word_to_ix))
    for word in words:
        vec[word_to_ix[word]] += 1
    return vec.view(1, -1)


model = BagOfWords(len(word_to_ix), 2)
set_weights(model, 0.1)
loss_function = nn.NLLLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(30):
    total = 0.0
    for words, label in sentences:
        model.zero_grad()
        loss = loss_function(model(counts_of(words)), torch.LongTensor([label_to_ix[label]]))
        loss.backward()
        optimizer.step()
        total += loss.item()
    if epoch % 10 == 9:
        print(epoch, f"{total:.4f}")
with torch.no_grad():
    guess = model(counts_of("add salt and bake the bread".split())).argmax(1).item()
print("'add salt and bake the bread' is about", [k for k, v in label_to_ix.items() if v == guess][0],
      "; weight of 'sail' per topic:", [round(v, 3) for v in next(model.parameters())[:, word_to_ix["sail"]].tolist()])

# ----- a trigram language model -----
text = "the tide comes in and the tide goes out and the boat waits for the tide to come in again".split()
trigrams = [((text[i - 2], text[i - 1]), text[i]) for i in range(2, len(text))]
vocab = sorted(set(text))
ix = {word: i for i, word in enumerate(vocab)}


class Trigram(nn.Module):
    def __init__(self, vocab_size, embedding_dim, context_size):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.hidden = nn.Linear(context_size * embedding_dim, 32)
        self.out = nn.Linear(32, vocab_size)

    def forward(self, context):
        embeds = self.embeddings(context).view((1, -1))
        return F.log_softmax(self.out(F.relu(self.hidden(embeds))), dim=1)


lm = Trigram(len(vocab), 8, 2)
set_weights(lm, 0.3)
optimizer = torch.optim.SGD(lm.parameters(), lr=0.05)
for epoch in range(40):
    total = 0.0
    for context, target in trigrams:
        lm.zero_grad()
        loss = loss_function(lm(torch.tensor([ix[w] for w in context], dtype=torch.long)),
                             torch.tensor([ix[target]], dtype=torch.long))
        loss.backward()
        optimizer.step()
        total += loss.item()
    if epoch % 10 == 9:
        print("trigram model, epoch", epoch, f"{total:.4f}")
