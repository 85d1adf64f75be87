"""Fixture for kverr's records goldens: one message raised from several places, so ids need
the guard rule and then the occurrence rule. Not real code."""


class TinyArgs:
    def check(self):
        if self.alpha_size > 8:
            raise ValueError("Unsupported configuration.")
        if self.beta_size > 8:
            raise ValueError("Unsupported configuration.")
        for item in self.items:
            if item:
                raise ValueError("Unsupported configuration.")
        for other in self.others:
            if item:
                raise ValueError("Unsupported configuration.")
        raise ValueError(f"Unsupported configuration {self.alpha_size}.")
