"""The model: transformers' GPT-2 with an interchangeable position scheme (`positions`, one small class
a scheme, `schemes` their registry), the attention kernel it runs, and the digit-aware tokenizer. It reads
the data layer for a task's digit order, never the trainer or MLflow.
"""
