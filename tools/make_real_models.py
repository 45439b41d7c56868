#!/usr/bin/env python3
"""make_real_models.py — builds the small "real-model" test models in tests/data/models with torch.

Run where torch and torchvision are installed (the GPU machine; this machine has neither):
    python3 tools/make_real_models.py OUT_DIR [name ...]
then copy OUT_DIR/<name> into tests/data/models/. Each model is a torch module with random
weights (seeded; BatchNorm statistics set from seeded batches as ../shared/bench/anchors.py's
calibrate_bn does, so activations keep unit scale), exported with torch.onnx.export (opset 17),
and two test data sets whose outputs torch computes on the CPU in fp32.

  cnn_small           conv-BN-ReLU stem, MaxPool, residual blocks (one strided, 1x1 downsample),
                      global average pool, Linear — the ResNet pattern at 64x64
  mobilenet_v3_tiny   torchvision mobilenet_v3_small(width_mult=0.25): depthwise convs,
                      Hardswish/Hardsigmoid, squeeze-excitation, adaptive pooling
  detector_tiny       strided backbone, FPN top-down path (nearest Resize + add), a ConvTranspose
                      upsampling branch, class/box heads flattened and concatenated
  kws_gru             Conv1d front end, 2-layer bidirectional GRU (batch_first), Linear
  lstm_tagger         Embedding, 2-layer bidirectional LSTM, Linear per token
  audio_frontend      waveform → STFT (Hann) → power → mel matrix → log → Conv1d+GELU stack →
                      mean over time (the Whisper-style front end)
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

OPSET = 17


def calibrate_bn(m, shape, steps=4):
    g = torch.Generator().manual_seed(1)
    for mod in m.modules():
        if isinstance(mod, nn.modules.batchnorm._BatchNorm):
            mod.reset_running_stats()
            mod.momentum = None
    m.train()
    with torch.no_grad():
        for _ in range(steps):
            m(torch.randn(*shape, generator=g))
    return m.eval()


def cbr(cin, cout, k=3, s=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU())


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = cbr(cin, cout, 3, stride)
        self.c2 = nn.Sequential(nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        return F.relu(self.c2(self.c1(x)) + idt)


class CnnSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = cbr(3, 16, 3, 2)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.b1 = Block(16, 16, 1)
        self.b2 = Block(16, 32, 2)
        self.b3 = Block(32, 64, 2)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.b3(self.b2(self.b1(self.pool(self.stem(x)))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class DetectorTiny(nn.Module):
    def __init__(self, classes=5, anchors=3):
        super().__init__()
        self.s1, self.s2, self.s3 = cbr(3, 16, 3, 2), cbr(16, 32, 3, 2), cbr(32, 64, 3, 2)
        self.l2, self.l3 = nn.Conv2d(32, 32, 1), nn.Conv2d(64, 32, 1)
        self.up = nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1)
        self.cls = nn.ModuleList(nn.Conv2d(c, anchors * classes, 3, 1, 1) for c in (32, 32, 16))
        self.box = nn.ModuleList(nn.Conv2d(c, anchors * 4, 3, 1, 1) for c in (32, 32, 16))
        self.classes = classes

    def forward(self, x):
        c1 = self.s1(x)
        c2 = self.s2(c1)
        c3 = self.s3(c2)
        p3 = self.l3(c3)
        p2 = self.l2(c2) + F.interpolate(p3, scale_factor=2.0, mode="nearest")
        p1 = F.relu(self.up(p2))
        cls, box = [], []
        for i, p in enumerate((p3, p2, p1)):
            n = p.shape[0]
            cls.append(self.cls[i](p).permute(0, 2, 3, 1).reshape(n, -1, self.classes))
            box.append(self.box[i](p).permute(0, 2, 3, 1).reshape(n, -1, 4))
        return torch.sigmoid(torch.cat(cls, 1)), torch.cat(box, 1)


class KwsGru(nn.Module):
    def __init__(self):
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(40, 64, 5, 2, 2), nn.BatchNorm1d(64), nn.ReLU())
        self.gru = nn.GRU(64, 48, num_layers=2, batch_first=True, bidirectional=True)
        self.out = nn.Linear(96, 12)

    def forward(self, x):  # x: [B, 40 mel bins, T]
        h = self.front(x).transpose(1, 2)
        y, _ = self.gru(h)
        return self.out(y[:, -1])


class LstmTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(500, 32)
        self.lstm = nn.LSTM(32, 40, num_layers=2, bidirectional=True)
        self.out = nn.Linear(80, 9)

    def forward(self, ids):  # ids: [T, B]
        y, _ = self.lstm(self.emb(ids))
        return self.out(y)


def mel_matrix(n_freqs, n_mels, sr=8000):
    hz = np.linspace(0, sr / 2, n_freqs)
    mel = lambda f: 2595.0 * np.log10(1.0 + f / 700.0)
    pts = np.linspace(mel(0), mel(sr / 2), n_mels + 2)
    edges = 700.0 * (10 ** (pts / 2595.0) - 1)
    fb = np.zeros((n_freqs, n_mels), np.float32)
    for m in range(n_mels):
        lo, c, hi = edges[m], edges[m + 1], edges[m + 2]
        fb[:, m] = np.clip(np.minimum((hz - lo) / (c - lo), (hi - hz) / (hi - c)), 0, None)
    return torch.from_numpy(fb)


class AudioFrontend(nn.Module):
    def __init__(self, n_fft=256, hop=128, mels=32):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft))
        self.register_buffer("mel", mel_matrix(n_fft // 2 + 1, mels))
        self.c1 = nn.Conv1d(mels, 48, 3, 1, 1)
        self.c2 = nn.Conv1d(48, 48, 3, 2, 1)
        self.out = nn.Linear(48, 8)

    def forward(self, wav):  # [B, samples]
        spec = torch.stft(wav, self.n_fft, self.hop, window=self.window, center=False,
                          return_complex=False)  # [B, freqs, frames, 2]
        power = spec.pow(2).sum(-1)
        logmel = torch.log(torch.matmul(power.transpose(1, 2), self.mel) + 1e-6).transpose(1, 2)
        h = F.gelu(self.c2(F.gelu(self.c1(logmel))))
        return self.out(h.mean(-1))


def build(name):
    torch.manual_seed(0)
    if name == "cnn_small":
        return calibrate_bn(CnnSmall(), (4, 3, 64, 64)), [(1, 3, 64, 64)], "float"
    if name == "mobilenet_v3_tiny":
        import torchvision
        m = torchvision.models.mobilenet_v3_small(width_mult=0.25, num_classes=10)
        return calibrate_bn(m, (4, 3, 96, 96)), [(1, 3, 96, 96)], "float"
    if name == "detector_tiny":
        return calibrate_bn(DetectorTiny(), (4, 3, 128, 128)), [(1, 3, 128, 128)], "float"
    if name == "kws_gru":
        return calibrate_bn(KwsGru(), (4, 40, 100)), [(1, 40, 100)], "float"
    if name == "lstm_tagger":
        return LstmTagger().eval(), [(24, 1)], "ids"
    if name == "audio_frontend":
        return AudioFrontend().eval(), [(1, 8000)], "float"
    raise SystemExit(f"unknown model {name}")


def main():
    import onnx
    from onnx import numpy_helper
    out = sys.argv[1]
    names = sys.argv[2:] or ["cnn_small", "mobilenet_v3_tiny", "detector_tiny", "kws_gru",
                             "lstm_tagger", "audio_frontend"]
    for name in names:
        m, shapes, kind = build(name)
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)

        def inputs(seed):
            g = torch.Generator().manual_seed(seed)
            if kind == "ids":
                return [torch.randint(0, 500, s, generator=g) for s in shapes]
            return [torch.randn(*s, generator=g) for s in shapes]

        path = os.path.join(d, "model.onnx")
        torch.onnx.export(m, tuple(inputs(10)), path, opset_version=OPSET, dynamo=False,
                          input_names=[f"input_{i}" for i in range(len(shapes))])
        model = onnx.load(path)
        in_names = [i.name for i in model.graph.input
                    if i.name not in {t.name for t in model.graph.initializer}]
        out_names = [o.name for o in model.graph.output]
        for k, seed in enumerate((11, 12)):
            ins = inputs(seed)
            with torch.no_grad():
                outs = m(*ins)
            outs = outs if isinstance(outs, (tuple, list)) else (outs,)
            sd = os.path.join(d, f"test_data_set_{k}")
            os.makedirs(sd, exist_ok=True)
            for i, (n, t) in enumerate(zip(in_names, ins)):
                open(os.path.join(sd, f"input_{i}.pb"), "wb").write(
                    numpy_helper.from_array(t.numpy(), n).SerializeToString())
            for i, (n, t) in enumerate(zip(out_names, outs)):
                open(os.path.join(sd, f"output_{i}.pb"), "wb").write(
                    numpy_helper.from_array(t.detach().numpy().astype(np.float32), n)
                    .SerializeToString())
        ops = sorted({n.op_type for n in model.graph.node})
        size = os.path.getsize(path)
        print(f"{name}: {size / 1e6:.2f} MB, ops: {' '.join(ops)}")
        try:
            import onnxruntime as ort
            s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            got = s.run(None, {n: t.numpy() for n, t in zip(in_names, inputs(11))})
            with torch.no_grad():
                ref = m(*inputs(11))
            ref = ref if isinstance(ref, (tuple, list)) else (ref,)
            err = max(float(np.linalg.norm(g - r.numpy()) / max(np.linalg.norm(r.numpy()), 1e-30))
                      for g, r in zip(got, ref))
            print(f"  onnxruntime vs torch rel_l2 {err:.2e}")
        except ImportError:
            pass


if __name__ == "__main__":
    main()
