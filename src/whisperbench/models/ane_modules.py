"""The torch modules of Whisper in the ANE layout (see :mod:`whisperbench.models.ane`, which imports this
module only when a model is built, so that importing it never imports torch)."""

from __future__ import annotations

import torch
from torch import nn


class ChannelLayerNorm(nn.Module):
    """LayerNorm over dim 1 of a ``(B, C, 1, S)`` tensor (same parameters as ``nn.LayerNorm(C)``).

    Safe in float16: the centred values are divided by their largest magnitude before squaring
    (``y = c / m``, ``c / sqrt(mean(c^2) + eps) = y / sqrt(mean(y^2) + eps / m^2)``, the same
    value). A plain mean of squares overflows float16 on real Whisper activations: tiny.en's
    encoder carries a residual channel near 650 after block 3, whose square exceeds 65504.
    ``m`` (any positive value gives the same result) is ``max |c| + 1e-3``, so a constant input
    gives 0, not 0/0.
    """

    def __init__(self, channels: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        centered = x - x.mean(dim=1, keepdim=True)
        magnitude = centered.abs().amax(dim=1, keepdim=True) + 1e-3
        scaled = centered / magnitude
        variance = (scaled * scaled).mean(dim=1, keepdim=True) + self.eps / (magnitude * magnitude)
        return scaled * torch.rsqrt(variance) * self.weight.view(1, -1, 1, 1) + self.bias.view(1, -1, 1, 1)


def conv1x1(n_in: int, n_out: int, bias: bool = True):
    """A 1x1 ``Conv2d`` standing in for a linear layer (the ANE's preferred layout: channels first, B x C x 1 x T)."""
    return nn.Conv2d(n_in, n_out, kernel_size=1, bias=bias)


class SplitHeadAttention(nn.Module):
    """Multi-head attention on ``(B, C, 1, S)`` tensors, one head at a time."""

    def __init__(self, n_state: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.head_dim = n_state // n_head
        self.query = conv1x1(n_state, n_state)
        self.key = conv1x1(n_state, n_state, bias=False)
        self.value = conv1x1(n_state, n_state)
        self.out = conv1x1(n_state, n_state)

    def attend(self, q, k, v, key_mask=None):
        """q ``(B, C, 1, Sq)``, k/v ``(B, C, 1, Sk)``, key_mask ``(B, Sk, 1, 1)`` additive -> ``(B, C, 1, Sq)``."""
        scale = self.head_dim**-0.5
        heads = []
        keys_last = k.transpose(1, 3)  # (B, Sk, 1, C): one transpose for all heads
        for h in range(self.n_head):
            part = slice(h * self.head_dim, (h + 1) * self.head_dim)
            # weights (B, Sk, 1, Sq): keys on the channel axis, softmax over it
            weights = torch.einsum("bchq,bkhc->bkhq", q[:, part] * scale, keys_last[..., part])
            if key_mask is not None:
                weights = weights + key_mask
            weights = weights.softmax(dim=1)
            heads.append(torch.einsum("bkhq,bchk->bchq", weights, v[:, part]))
        return self.out(torch.cat(heads, dim=1))


class MLP(nn.Sequential):
    """The feed-forward block of a Whisper layer as 1x1 convolutions over channels-first activations."""

    def __init__(self, n_state: int):
        super().__init__(conv1x1(n_state, 4 * n_state), nn.GELU(), conv1x1(4 * n_state, n_state))


class EncoderBlock(nn.Module):
    """One encoder layer in the ANE layout: self-attention with split heads, then the MLP."""

    def __init__(self, n_state: int, n_head: int):
        super().__init__()
        self.attn = SplitHeadAttention(n_state, n_head)
        self.attn_ln = ChannelLayerNorm(n_state)
        self.mlp = MLP(n_state)
        self.mlp_ln = ChannelLayerNorm(n_state)

    def forward(self, x):
        h = self.attn_ln(x)
        x = x + self.attn.attend(self.attn.query(h), self.attn.key(h), self.attn.value(h))
        return x + self.mlp(self.mlp_ln(x))


class AudioEncoderANE(nn.Module):
    """log-mel ``(B, n_mels, 1, 2 * n_ctx)`` -> audio features ``(B, n_state, 1, n_ctx)``."""

    def __init__(self, n_mels: int, n_ctx: int, n_state: int, n_head: int, n_layer: int):
        super().__init__()
        self.conv1 = nn.Conv2d(n_mels, n_state, kernel_size=(1, 3), padding=(0, 1))
        self.conv2 = nn.Conv2d(n_state, n_state, kernel_size=(1, 3), stride=(1, 2), padding=(0, 1))
        self.register_buffer("positional_embedding", torch.zeros(1, n_state, 1, n_ctx))
        self.blocks = nn.ModuleList(EncoderBlock(n_state, n_head) for _ in range(n_layer))
        self.ln_post = ChannelLayerNorm(n_state)

    def forward(self, mel):
        x = nn.functional.gelu(self.conv1(mel))
        x = nn.functional.gelu(self.conv2(x))
        x = x + self.get_buffer("positional_embedding")
        for block in self.blocks:
            x = block(x)
        return self.ln_post(x)


class DecoderBlock(nn.Module):
    """One decoder layer in the ANE layout: masked self-attention, cross-attention, then the MLP."""

    def __init__(self, n_state: int, n_head: int):
        super().__init__()
        self.attn = SplitHeadAttention(n_state, n_head)
        self.attn_ln = ChannelLayerNorm(n_state)
        self.cross_attn = SplitHeadAttention(n_state, n_head)
        self.cross_attn_ln = ChannelLayerNorm(n_state)
        self.mlp = MLP(n_state)
        self.mlp_ln = ChannelLayerNorm(n_state)

    def forward(self, x, key_cache, value_cache, update_mask, padding_mask, cross_key, cross_value):
        h = self.attn_ln(x)
        key, value = self.attn.key(h), self.attn.value(h)  # (B, C, 1, 1): this position's entries
        keys = key_cache * (1.0 - update_mask) + key * update_mask
        values = value_cache * (1.0 - update_mask) + value * update_mask
        x = x + self.attn.attend(self.attn.query(h), keys, values, padding_mask)
        h = self.cross_attn_ln(x)
        x = x + self.cross_attn.attend(self.cross_attn.query(h), cross_key, cross_value)
        return x + self.mlp(self.mlp_ln(x)), key, value


class TextDecoderANE(nn.Module):
    """One decoding step with an explicit key/value cache (see the module docstring)."""

    def __init__(self, n_vocab: int, n_ctx: int, n_state: int, n_head: int, n_layer: int):
        super().__init__()
        self.n_state = n_state
        self.token_embedding = nn.Embedding(n_vocab, n_state)
        self.positional_embedding = nn.Parameter(torch.zeros(n_ctx, n_state))
        self.blocks = nn.ModuleList(DecoderBlock(n_state, n_head) for _ in range(n_layer))
        self.ln = ChannelLayerNorm(n_state)

    def cross_kv(self, audio_features):
        """Cross-attention keys and values of every layer, ``(B, n_state * n_layer, 1, n_audio_ctx)`` each."""
        blocks: list[DecoderBlock] = list(self.blocks)  # type: ignore[arg-type]  # a ModuleList of DecoderBlock
        keys = [block.cross_attn.key(audio_features) for block in blocks]
        values = [block.cross_attn.value(audio_features) for block in blocks]
        return torch.cat(keys, dim=1), torch.cat(values, dim=1)

    def forward(
        self,
        input_ids,
        cache_length,
        key_cache,
        value_cache,
        kv_cache_update_mask,
        decoder_key_padding_mask,
        cross_key_cache,
        cross_value_cache,
    ):
        x = self.token_embedding(input_ids) + self.positional_embedding[cache_length]  # (B, C)
        x = x[:, :, None, None]
        update_mask = kv_cache_update_mask[:, None, None, :]  # (B, 1, 1, T)
        padding_mask = decoder_key_padding_mask[:, :, None, None]  # (B, T, 1, 1)
        c = self.n_state
        key_updates, value_updates = [], []
        for i, block in enumerate(self.blocks):
            layer = slice(i * c, (i + 1) * c)
            x, key, value = block(
                x,
                key_cache[:, layer],
                value_cache[:, layer],
                update_mask,
                padding_mask,
                cross_key_cache[:, layer],
                cross_value_cache[:, layer],
            )
            key_updates.append(key)
            value_updates.append(value)
        x = self.ln(x)  # (B, C, 1, 1)
        # tied output projection: F.linear keeps the embedding's (V, C) layout, so Core ML stores it once
        logits = nn.functional.linear(x[:, :, 0, 0], self.token_embedding.weight)[:, None, :]
        return logits, torch.cat(key_updates, dim=1), torch.cat(value_updates, dim=1)


class WhisperANE(nn.Module):
    """Whisper (encoder and decoder) in the Apple Neural Engine layout, loaded from openai-whisper's weights."""

    def __init__(self, dims: dict):
        super().__init__()
        self.dims = dict(dims)
        self.encoder = AudioEncoderANE(
            dims["n_mels"], dims["n_audio_ctx"], dims["n_audio_state"], dims["n_audio_head"], dims["n_audio_layer"]
        )
        self.decoder = TextDecoderANE(
            dims["n_vocab"], dims["n_text_ctx"], dims["n_text_state"], dims["n_text_head"], dims["n_text_layer"]
        )
