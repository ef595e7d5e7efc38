"""The model: transformers' GPT-2 with an interchangeable position scheme (`positions`), and the
digit-aware tokenizer. It reads the data layer for a task's digit order, never the trainer or MLflow.
"""
