import torch
class ModelNew(torch.nn.Module):
    def __init__(self, *args)
        super().__init__()
